package rollout

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deployment(gen, observed int64, replicas int32, s appsv1.DeploymentStatus) *appsv1.Deployment {
	s.ObservedGeneration = observed
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "envoy", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status:     s,
	}
}

// The conditions of `kubectl rollout status`, in its order.
func TestDeploymentStatus(t *testing.T) {
	cases := []struct {
		name    string
		d       *appsv1.Deployment
		done    bool
		waiting string
		err     string
	}{
		{"spec not observed", deployment(2, 1, 1, appsv1.DeploymentStatus{UpdatedReplicas: 1, Replicas: 1, AvailableReplicas: 1}), false, "spec update to be observed", ""},
		{"deadline exceeded", deployment(1, 1, 1, appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet envoy-1 has timed out progressing"}}}), false, "", "exceeded its progress deadline"},
		{"not updated", deployment(1, 1, 1, appsv1.DeploymentStatus{Replicas: 1}), false, "0 out of 1 new replicas", ""},
		{"old replica left", deployment(1, 1, 1, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1}), false, "1 old replicas are pending termination", ""},
		{"not available", deployment(1, 1, 1, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1}), false, "0 of 1 updated replicas are available", ""},
		{"rolled out", deployment(3, 3, 1, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}), true, "", ""},
		{"scaled to zero", deployment(4, 4, 0, appsv1.DeploymentStatus{}), true, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done, waiting, err := DeploymentStatus(c.d)
			if done != c.done || !strings.Contains(waiting, c.waiting) || (c.waiting == "" && waiting != "") {
				t.Errorf("done %v waiting %q, want %v %q", done, waiting, c.done, c.waiting)
			}
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("err %v, want %q", err, c.err)
			}
		})
	}
}

func TestDaemonSetStatus(t *testing.T) {
	ds := func(gen, observed int64, s appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		s.ObservedGeneration = observed
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: s}
	}
	cases := []struct {
		name string
		d    *appsv1.DaemonSet
		done bool
	}{
		{"not observed", ds(2, 1, appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}), false},
		{"updating", ds(1, 1, appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}), false},
		{"unavailable", ds(1, 1, appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 1}), false},
		{"done", ds(1, 1, appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}), true},
	}
	for _, c := range cases {
		if done, _ := DaemonSetStatus(c.d); done != c.done {
			t.Errorf("%s: done %v, want %v", c.name, done, c.done)
		}
	}
}
