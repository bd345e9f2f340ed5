//go:build tools

// Package tools pins the Kubernetes commands the tests run. kubelet is
// listed even where only the control plane is needed: without it go.sum
// misses entries the other commands' build graph shares.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
