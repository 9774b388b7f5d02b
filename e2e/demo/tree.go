package demo

import "github.com/ai-dynamo/grove/internal/kubectlgrove"

// The demo draws its trees with `kubectl grove tree`'s code, so what it shows is the product.
type (
	// Snapshot is kubectlgrove.Snapshot.
	Snapshot = kubectlgrove.Snapshot
	// Packing is kubectlgrove.Packing.
	Packing = kubectlgrove.Packing
)

// Read is kubectlgrove.Read.
var Read = kubectlgrove.Read
