package demo

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type metav1Condition = metav1.Condition
