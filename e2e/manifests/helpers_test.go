package manifests

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

func metav1PatchOptions(dryRun bool) metav1.PatchOptions {
	o := metav1.PatchOptions{FieldManager: "grove-install-test", Force: boolPtr(true), FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

func boolPtr(b bool) *bool { return &b }
