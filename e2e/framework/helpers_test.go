package framework

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func cpu(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func clientKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }
