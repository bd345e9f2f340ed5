package cpulimit

import (
	"testing"
	"testing/fstest"
)

func TestQuota(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  float64
	}{
		{
			name:  "cgroup v2 without a quota",
			files: map[string]string{"proc/self/cgroup": "0::/system.slice/envoy.service\n", "sys/fs/cgroup/system.slice/envoy.service/cpu.max": "max 100000\n"},
			want:  0,
		},
		{
			name:  "cgroup v2 pod limit of 1.5 CPUs",
			files: map[string]string{"proc/self/cgroup": "0::/kubepods/pod1/c1\n", "sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "150000 100000\n"},
			want:  1.5,
		},
		{
			name: "cgroup v2: a parent's tighter quota binds the child",
			files: map[string]string{
				"proc/self/cgroup":                       "0::/kubepods/pod1/c1\n",
				"sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "400000 100000\n",
				"sys/fs/cgroup/kubepods/pod1/cpu.max":    "100000 100000\n",
				"sys/fs/cgroup/kubepods/cpu.max":         "max 100000\n",
			},
			want: 1,
		},
		{
			name:  "cgroup v2 namespaced container: the quota is at the mount's root",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": "50000 100000\n"},
			want:  0.5,
		},
		{
			name: "cgroup v1 cpu,cpuacct hierarchy",
			files: map[string]string{
				"proc/self/cgroup": "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n",
				"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us":  "200000\n",
				"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
			},
			want: 2,
		},
		{
			name: "cgroup v1 without a quota (-1)",
			files: map[string]string{
				"proc/self/cgroup":                           "4:cpu,cpuacct:/\n",
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":         "-1\n",
				"sys/fs/cgroup/cpu/cpu.cfs_period_us":        "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "garbage\n",
			},
			want: 0,
		},
		{
			name:  "unreadable or malformed quota files leave the quota unknown",
			files: map[string]string{"proc/self/cgroup": "0::/a\nnot a line\n", "sys/fs/cgroup/a/cpu.max": "100000\n"},
			want:  0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			got, err := Quota(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Quota = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestQuotaWithoutCgroupsIsAnError(t *testing.T) {
	if _, err := Quota(fstest.MapFS{}); err == nil {
		t.Fatal("no proc/self/cgroup: want an error")
	}
}

func TestLimitCPUs(t *testing.T) {
	tests := []struct {
		limit Limit
		want  int
	}{
		{Limit{Affinity: 8}, 8},
		{Limit{Affinity: 8, Quota: 1.5}, 2},
		{Limit{Affinity: 8, Quota: 1}, 1},
		{Limit{Affinity: 2, Quota: 4}, 2},
		{Limit{Affinity: 4, Quota: 0.1}, 1},
	}
	for _, tt := range tests {
		if got := tt.limit.CPUs(); got != tt.want {
			t.Errorf("%+v.CPUs() = %d, want %d", tt.limit, got, tt.want)
		}
	}
}

// The machine's own limit is readable: on a cgroup-v2 host this exercises
// the real files, and whatever the host, the answer is at least one CPU and
// never more than the affinity.
func TestCurrent(t *testing.T) {
	l := Current()
	if l.CPUs() < 1 || l.CPUs() > l.Affinity {
		t.Fatalf("Current() = %v: CPUs() %d outside [1, affinity]", l, l.CPUs())
	}
	t.Log(l)
}
