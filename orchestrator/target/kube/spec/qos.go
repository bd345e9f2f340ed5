package spec

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// GuaranteedProblems lists why pod would not be in the Guaranteed QoS class
// (every container and init container with CPU and memory requests equal to
// limits), and why container exclusive would not get exclusive cores from
// the static CPU manager (a whole number of CPUs). Empty means fine.
func GuaranteedProblems(pod *corev1.PodSpec, exclusive string) []string {
	var problems []string
	check := func(kind string, c corev1.Container) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			switch {
			case !hasLim:
				problems = append(problems, fmt.Sprintf("%s %s: no %s limit", kind, c.Name, r))
			case hasReq && req.Cmp(lim) != 0:
				// A missing request defaults to the limit: only a different
				// one breaks the class.
				problems = append(problems, fmt.Sprintf("%s %s: %s request %s differs from limit %s", kind, c.Name, r, req.String(), lim.String()))
			}
		}
		if c.Name == exclusive {
			if cpu, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && cpu.MilliValue()%1000 != 0 {
				problems = append(problems, fmt.Sprintf("%s %s: CPU %s is not a whole number of cores: no exclusive CPUs", kind, c.Name, cpu.String()))
			}
		}
	}
	for _, c := range pod.InitContainers {
		check("init container", c)
	}
	for _, c := range pod.Containers {
		check("container", c)
	}
	return problems
}

// CheckGuaranteed verifies a running pod: the API server's QoS class and
// the spec rules of GuaranteedProblems.
func CheckGuaranteed(pod *corev1.Pod, exclusive string) error {
	problems := GuaranteedProblems(&pod.Spec, exclusive)
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		problems = append([]string{fmt.Sprintf("QoS class is %q", pod.Status.QOSClass)}, problems...)
	}
	if len(problems) == 0 {
		return nil
	}
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = errors.New(p)
	}
	return fmt.Errorf("pod %s/%s is not Guaranteed with whole cores: %w", pod.Namespace, pod.Name, errors.Join(errs...))
}
