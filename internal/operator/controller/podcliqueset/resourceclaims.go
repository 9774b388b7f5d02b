package podcliqueset

import (
	"context"
)

// resourceClaims keeps the ResourceClaims of the PodCliqueSet's own resourceSharing entries
// (hierarchical resource sharing with DRA): one per AllReplicas entry and one per replica for a
// PerReplica entry, owned by the PodCliqueSet. They come before the PodCliques whose pods use
// them. Claims of scaling-group and clique entries belong to those controllers.
type resourceClaims struct{ r *Reconciler }

func (*resourceClaims) Name() string { return "resource-claim" }

func (c *resourceClaims) Sync(ctx context.Context, st *state) error {
	err := c.r.Claims.SyncPodCliqueSet(ctx, st.pcs)
	// A conflict is reported on the PodCliqueSet and still fails the sync: the pods that use the
	// claim must not be made while another's claim holds its name.
	_ = st.conflict(err)
	return err
}

// Delete leaves the claims to the garbage collector: they are owned by the PodCliqueSet and
// may still be reserved by pods that are shutting down.
func (*resourceClaims) Delete(context.Context, *state) error { return nil }
