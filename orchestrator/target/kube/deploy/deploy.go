// Package deploy applies the Kubernetes targets' objects with server-side
// apply under one field manager, and deletes them. Server-side apply makes
// every Deploy idempotent: applying the same configuration twice changes
// nothing, so nothing rolls; a changed field is a new revision.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Applier applies objects as FieldManager, forcing ownership of conflicting
// fields: the orchestrator is the authority on what it deploys.
type Applier struct {
	Client       kubernetes.Interface
	FieldManager string
}

func (a Applier) options() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: a.FieldManager, Force: true}
}

// Namespace applies a namespace.
func (a Applier) Namespace(ctx context.Context, ns *corev1ac.NamespaceApplyConfiguration) error {
	if _, err := a.Client.CoreV1().Namespaces().Apply(ctx, ns, a.options()); err != nil {
		return fmt.Errorf("applying namespace %s: %w", *ns.Name, err)
	}
	return nil
}

// ConfigMap applies a ConfigMap. An immutable one that already exists with
// the same content is left alone (applying it again would be refused if
// anything differed, which a content-named map never does).
func (a Applier) ConfigMap(ctx context.Context, cm *corev1ac.ConfigMapApplyConfiguration) error {
	_, err := a.Client.CoreV1().ConfigMaps(*cm.Namespace).Apply(ctx, cm, a.options())
	if err != nil {
		return fmt.Errorf("applying configmap %s/%s: %w", *cm.Namespace, *cm.Name, err)
	}
	return nil
}

// Secret applies a Secret.
func (a Applier) Secret(ctx context.Context, secret *corev1ac.SecretApplyConfiguration) error {
	if _, err := a.Client.CoreV1().Secrets(*secret.Namespace).Apply(ctx, secret, a.options()); err != nil {
		return fmt.Errorf("applying secret %s/%s: %w", *secret.Namespace, *secret.Name, err)
	}
	return nil
}

// Deployment applies a Deployment and returns its generation after the
// apply, which a rollout wait compares with the observed generation.
func (a Applier) Deployment(ctx context.Context, d *appsv1ac.DeploymentApplyConfiguration) (int64, error) {
	out, err := a.Client.AppsV1().Deployments(*d.Namespace).Apply(ctx, d, a.options())
	if err != nil {
		return 0, fmt.Errorf("applying deployment %s/%s: %w", *d.Namespace, *d.Name, err)
	}
	return out.Generation, nil
}

// DaemonSet applies a DaemonSet and returns its generation.
func (a Applier) DaemonSet(ctx context.Context, d *appsv1ac.DaemonSetApplyConfiguration) (int64, error) {
	out, err := a.Client.AppsV1().DaemonSets(*d.Namespace).Apply(ctx, d, a.options())
	if err != nil {
		return 0, fmt.Errorf("applying daemonset %s/%s: %w", *d.Namespace, *d.Name, err)
	}
	return out.Generation, nil
}

// DeleteConfigMaps deletes the ConfigMaps matching selector except keep.
func (a Applier) DeleteConfigMaps(ctx context.Context, namespace, selector, keep string) error {
	list, err := a.Client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing configmaps in %s: %w", namespace, err)
	}
	var errs []error
	for _, cm := range list.Items {
		if cm.Name == keep {
			continue
		}
		err := a.Client.CoreV1().ConfigMaps(namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting configmap %s/%s: %w", namespace, cm.Name, err))
		}
	}
	return errors.Join(errs...)
}

// DeleteNamespace deletes a namespace and everything in it, and waits until
// it is gone (its pods terminated, so their cores are free again), at most
// timeout. A namespace that does not exist is already deleted.
func (a Applier) DeleteNamespace(ctx context.Context, name string, timeout time.Duration) error {
	foreground := metav1.DeletePropagationForeground
	err := a.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &foreground})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := a.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s still terminating after %v: %w", name, timeout, err)
	}
	return nil
}

// WaitPodsGone waits until no pod matches selector in namespace.
func (a Applier) WaitPodsGone(ctx context.Context, namespace, selector string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := a.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("pods %q in %s still present after %v: %w", selector, namespace, timeout, err)
	}
	return nil
}
