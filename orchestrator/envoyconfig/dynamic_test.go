package envoyconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestBuildListenerMatchesTheStaticOne(t *testing.T) {
	o := wafOptions()
	o.AccessLogPath = "/tmp/a.log"
	listener, err := BuildListener(o)
	if err != nil {
		t.Fatal(err)
	}
	static := mustBuild(t, o).GetStaticResources().GetListeners()[0]
	if !proto.Equal(listener, static) {
		t.Errorf("LDS listener differs from the static bootstrap's:\n%v\n%v", listener, static)
	}
	if listener.GetName() != ListenerName {
		t.Errorf("listener name %q, want %q (a reload must replace, not add)", listener.GetName(), ListenerName)
	}
}

func TestBuildDynamicReadsListenersFromAWatchedFile(t *testing.T) {
	b, err := BuildDynamic(wafOptions(), "/run/wafsweep/lds.json")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.GetStaticResources().GetListeners()); n != 0 {
		t.Errorf("%d static listeners, want 0", n)
	}
	if clusters := b.GetStaticResources().GetClusters(); len(clusters) != 1 || clusters[0].GetName() != BackendClusterName {
		t.Errorf("clusters %v, want only %s", clusters, BackendClusterName)
	}
	source := b.GetDynamicResources().GetLdsConfig().GetPathConfigSource()
	if source.GetPath() != "/run/wafsweep/lds.json" || source.GetWatchedDirectory().GetPath() != "/run/wafsweep" {
		t.Errorf("LDS source %v, want the file watched through its directory", source)
	}
	if b.GetNode().GetId() == "" || b.GetNode().GetCluster() == "" {
		t.Error("no node identity: Envoy refuses xDS subscriptions without one")
	}
}

func TestBuildDynamicRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		path    string
		wantErr string
	}{
		{"relative LDS path", wafOptions(), "lds.json", "must be absolute"},
		{"bad options", Options{}, "/tmp/lds.json", "AdminPort 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := BuildDynamic(tt.opts, tt.path); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if _, err := BuildListener(Options{}); err == nil {
		t.Error("BuildListener accepted empty options")
	}
}

func TestWriteListenersFileRoundTripsAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lds.json")
	first, err := BuildListener(wafOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i, version := range []string{"1", "2"} {
		if err := WriteListenersFile(path, version, first); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	version, listeners, err := UnmarshalListeners(data)
	if err != nil {
		t.Fatal(err)
	}
	if version != "2" || len(listeners) != 1 || !proto.Equal(listeners[0], first) {
		t.Errorf("read back version %q, %d listeners", version, len(listeners))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only lds.json: %v", len(entries), entries)
	}
}
