package dataset

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A mixed step's members are journaled with it, into members.csv beside
// steps.csv, and read back whole; a sweep without a mix writes no file.
func TestJournalRecordsTheMembersOfAMixedStep(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(filepath.Join(dir, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	plain := fullRow(0, "waf/full-crs/get", 0)
	if err := j.Append(plain); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, MembersFile)); !os.IsNotExist(err) {
		t.Fatalf("a plain step created members.csv: %v", err)
	}
	mixed := fullRow(0, "waf/full-crs/mix:get=3,json_1k=1", 0)
	members := []MemberRow{
		{SweepID: "sw-1", ConfigID: mixed.ConfigID, Member: "get", Weight: 3, TargetRPS: 750, Connections: 48,
			Scheduled: 15000, Completed: 14990, AchievedRPS: 749.5, P50Ms: 0.5, P99Ms: 2.25},
		{SweepID: "sw-1", ConfigID: mixed.ConfigID, Member: "json_1k", Weight: 1, TargetRPS: 250, Connections: 16,
			Scheduled: 5000, Completed: 4990, Non2xx: 1, SocketErrors: 2, AchievedRPS: 249.5, P50Ms: math.NaN(), P99Ms: math.NaN()},
	}
	wrong := members[0]
	wrong.Seq = 7
	if err := j.Append(mixed, wrong); err == nil || !strings.Contains(err.Error(), "member get of step") {
		t.Errorf("a member of another step: err = %v", err)
	}
	if err := j.Append(mixed, members...); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMembers(filepath.Join(dir, MembersFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], members[0]) || got[1].Non2xx != 1 || !math.IsNaN(got[1].P99Ms) || !got[1].Of(mixed) {
		t.Errorf("read back %+v, want %+v", got, members)
	}
}

// After a crash between a step's members and its row, the step is
// measured again: the members written twice keep their last line.
func TestMembersWrittenTwiceKeepTheirLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), MembersFile)
	a, err := openAppender(path, memberSchema)
	if err != nil {
		t.Fatal(err)
	}
	first := MemberRow{ConfigID: "c", Member: "get", AchievedRPS: 1, P50Ms: 1, P99Ms: 1}
	again := first
	again.AchievedRPS = 2
	for _, m := range []MemberRow{first, again} {
		if err := a.write(&m); err != nil {
			t.Fatal(err)
		}
	}
	a.close()
	got, err := ReadMembers(path)
	if err != nil || len(got) != 1 || got[0].AchievedRPS != 2 {
		t.Errorf("read %+v (%v), want the second line alone", got, err)
	}
	if none, err := ReadMembers(filepath.Join(t.TempDir(), MembersFile)); none != nil || err != nil {
		t.Errorf("no file: %v %v, want no members and no error", none, err)
	}
}
