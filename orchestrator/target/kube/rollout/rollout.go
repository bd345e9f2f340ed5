// Package rollout waits for Deployments and DaemonSets to finish rolling
// out, with the conditions `kubectl rollout status` uses: the controller
// has observed the latest generation, every replica runs the latest
// template, no old replica is left, and every updated replica is available.
// It fails at once when the Deployment's progress deadline is exceeded, and
// then names the pods that do not start and why.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// pollEvery is how often the status is read: rollouts take seconds, and a
// read is cheap.
const pollEvery = 250 * time.Millisecond

// DeploymentStatus says whether d has rolled out, and if not what it waits
// for; an error means it cannot (progress deadline exceeded).
func DeploymentStatus(d *appsv1.Deployment) (done bool, waiting string, err error) {
	if d.Generation > d.Status.ObservedGeneration {
		return false, "waiting for the deployment spec update to be observed", nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return false, "", fmt.Errorf("deployment %q exceeded its progress deadline: %s", d.Name, c.Message)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d out of %d new replicas have been updated", s.UpdatedReplicas, want), nil
	case s.Replicas > s.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas are pending termination", s.Replicas-s.UpdatedReplicas), nil
	case s.AvailableReplicas < s.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas are available", s.AvailableReplicas, s.UpdatedReplicas), nil
	}
	return true, "", nil
}

// DaemonSetStatus is DeploymentStatus for a DaemonSet (RollingUpdate).
func DaemonSetStatus(d *appsv1.DaemonSet) (done bool, waiting string) {
	if d.Generation > d.Status.ObservedGeneration {
		return false, "waiting for the daemon set spec update to be observed"
	}
	s := d.Status
	switch {
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d out of %d new pods have been updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d updated pods are available", s.NumberAvailable, s.DesiredNumberScheduled)
	}
	return true, ""
}

// Deployment waits until the named Deployment has rolled out, at most
// timeout, and returns it.
func Deployment(ctx context.Context, c kubernetes.Interface, namespace, name string, timeout time.Duration) (*appsv1.Deployment, error) {
	var last *appsv1.Deployment
	waiting := "not read yet"
	var fatal error
	err := wait.PollUntilContextTimeout(ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			waiting = err.Error()
			return false, nil
		}
		last = d
		done, w, err := DeploymentStatus(d)
		if err == nil && !done {
			err = crashLooping(ctx, c, namespace, d.Spec.Selector)
		}
		if err != nil {
			fatal = err
			return false, err
		}
		waiting = w
		return done, nil
	})
	if err == nil {
		return last, nil
	}
	if fatal == nil {
		fatal = fmt.Errorf("deployment %s/%s not rolled out after %v (%s): %w", namespace, name, timeout, waiting, err)
	}
	return nil, withPodReasons(ctx, c, namespace, last, fatal)
}

// DaemonSet waits until the named DaemonSet has rolled out and has at least
// one pod, at most timeout.
func DaemonSet(ctx context.Context, c kubernetes.Interface, namespace, name string, timeout time.Duration) (*appsv1.DaemonSet, error) {
	waiting := "not read yet"
	var last *appsv1.DaemonSet
	err := wait.PollUntilContextTimeout(ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			waiting = err.Error()
			return false, nil
		}
		last = d
		done, w := DaemonSetStatus(d)
		if done && d.Status.DesiredNumberScheduled == 0 {
			done, w = false, "no node matches the daemon set's node affinity"
		}
		waiting = w
		return done, nil
	})
	if err != nil {
		err = fmt.Errorf("daemonset %s/%s not rolled out after %v (%s): %w", namespace, name, timeout, waiting, err)
		if last != nil {
			return nil, podReasons(ctx, c, namespace, last.Spec.Selector, err)
		}
		return nil, err
	}
	return last, nil
}

func withPodReasons(ctx context.Context, c kubernetes.Interface, namespace string, d *appsv1.Deployment, err error) error {
	if d == nil {
		return err
	}
	return podReasons(ctx, c, namespace, d.Spec.Selector, err)
}

// podReasons adds to err why the selected pods are not ready: unscheduled
// (and the scheduler's message), waiting containers, crash loops.
func podReasons(ctx context.Context, c kubernetes.Interface, namespace string, selector *metav1.LabelSelector, err error) error {
	sel, selErr := metav1.LabelSelectorAsSelector(selector)
	if selErr != nil {
		return err
	}
	// The caller's context may be what expired: read with a fresh one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	pods, listErr := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if listErr != nil || len(pods.Items) == 0 {
		return errors.Join(err, errors.New("no pod was created"))
	}
	var reasons []string
	for _, p := range pods.Items {
		if r := PodNotReadyReason(&p); r != "" {
			reasons = append(reasons, p.Name+": "+r+lastLog(ctx, c, &p))
		}
	}
	if len(reasons) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s", err, strings.Join(reasons, "; "))
}

// PodNotReadyReason says why a pod is not ready, or "" if it is.
func PodNotReadyReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "unschedulable: " + c.Message
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("container %s exited %d: %s %s", cs.Name, t.ExitCode, t.Reason, t.Message)
		}
	}
	if !PodReady(p) {
		return "not ready (phase " + string(p.Status.Phase) + ")"
	}
	return ""
}

// PodReady reports the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RunningPod returns the single ready, not terminating pod that matches
// selector and whose template annotation key has value want (the current
// revision), waiting up to timeout: after a rollout the Deployment's status
// can be complete a moment before the old pod object is gone.
func RunningPod(ctx context.Context, c kubernetes.Interface, namespace string, selector map[string]string, key, want string, timeout time.Duration) (*corev1.Pod, error) {
	var found *corev1.Pod
	why := "none listed yet"
	err := wait.PollUntilContextTimeout(ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		var current []*corev1.Pod
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil || (key != "" && p.Annotations[key] != want) {
				continue
			}
			current = append(current, p)
		}
		switch {
		case len(current) == 0:
			why = "no pod of the current revision"
			return false, nil
		case len(current) > 1:
			why = fmt.Sprintf("%d pods of the current revision", len(current))
			return false, nil
		case !PodReady(current[0]):
			why = current[0].Name + " " + PodNotReadyReason(current[0])
			return false, nil
		}
		found = current[0]
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the pod of %v in %s: %s: %w", selector, namespace, why, err)
	}
	return found, nil
}

// crashLoopRestarts is how many restarts make a rollout hopeless: a
// container that failed that often will not become available by waiting.
const crashLoopRestarts = 2

// crashLooping fails when a selected pod's container keeps exiting.
func crashLooping(ctx context.Context, c kubernetes.Interface, namespace string, selector *metav1.LabelSelector) error {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount >= crashLoopRestarts {
				return fmt.Errorf("pod %s: container %s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}
	return nil
}

// lastLog is the end of the log of a pod's container that exited, so a
// failed rollout says why (an Envoy rejecting its bootstrap, say).
func lastLog(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		previous := cs.LastTerminationState.Terminated != nil
		if !previous && cs.State.Terminated == nil {
			continue
		}
		tail := int64(15)
		raw, err := c.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, Previous: previous, TailLines: &tail}).DoRaw(ctx)
		if err != nil || len(raw) == 0 {
			continue
		}
		return fmt.Sprintf("\n--- last log lines of %s/%s:\n%s", p.Name, cs.Name, strings.TrimSpace(string(raw)))
	}
	return ""
}
