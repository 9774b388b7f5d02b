// Package dra is grove-scheduler's gang-aware DRA plugin. It runs next to the scheduler's own
// DynamicResources plugin, which still allocates devices, and makes gangs DRA-aware:
//   - a gang waits (PreEnqueue) while a ResourceClaim its quorum uses does not exist yet, and
//     is retried when the claim appears, instead of failing attempts in a loop;
//   - at the start of a gang attempt (PreFilter) it counts the devices the gang's unallocated
//     claims need, per device class, against the free devices each candidate domain's
//     ResourceSlices offer, and turns the gang away before any member is assumed when no domain
//     has enough;
//   - it tells the topology plugin which domains still offer the devices and where devices of
//     claims already allocated to shared claims are, so the gang's domain is chosen there;
//   - a claim shared by more pods than a ResourceClaim can be reserved for is reported by an
//     event on the PodGang;
//   - members may share a claim nobody has allocated yet: once one member's Reserve allocated
//     it, the others see it allocated and wait at Permit until that member is bound
//     (inflight.go).
//
// The arithmetic lives in plugins/internal/devices; this package wires it to the framework.
package dra

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/devices"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.DRAPluginName

// eventInterval is the least time between two equal events about one gang.
const eventInterval = 5 * time.Minute

// Plugin is the DRA plugin.
type Plugin struct {
	args   pluginargs.DRAArgs
	handle fwk.Handle
	gangs  *gangcache.Shared
	dra    fwk.SharedDRAManager
	match  devices.Matcher
	pods   corelisters.PodLister
	// informerSlices are the ResourceSlices as the scheduler's informer has them: see
	// withUntracked.
	informerSlices resourcelisters.ResourceSliceLister

	mu sync.Mutex
	// inFlight are named claims gang members allocated in Reserve, by claim UID.
	inFlight map[types.UID]*inFlight
}

var (
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New returns the plugin's factory: the plugin is built over the profiles' shared gang state,
// which plugins.Registry creates and hands to every Grove plugin.
func New(profiles *gangcache.Profiles) frameworkruntime.PluginFactory {
	return profiles.Factory(newPlugin)
}

// newPlugin builds the plugin from its (defaulted) args. Without the scheduler's DRA manager
// (DRA disabled) the plugin does nothing.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, profiles *gangcache.Profiles) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.DRAArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type DRAArgs, got %T", obj)
	}
	if err := pluginargs.ValidateDRAArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	p := &Plugin{args: *args, handle: h, dra: h.SharedDRAManager(), inFlight: map[types.UID]*inFlight{}}
	if p.dra == nil {
		return p, nil
	}
	gangs, err := profiles.For(ctx, h)
	if err != nil {
		return nil, err
	}
	p.gangs = gangs
	p.match = devices.CELMatcher(ctx, p.dra.DeviceClasses().Get)
	p.pods = h.SharedInformerFactory().Core().V1().Pods().Lister()
	p.informerSlices = h.SharedInformerFactory().Resource().V1().ResourceSlices().Lister()
	gangs.SetDeviceAdvisor(p)
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// namedClaims are the ResourceClaims a pod names in spec.resourceClaims (Grove's shared
// claims are named; claims made from a template are not).
func namedClaims(pod *v1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil && *c.ResourceClaimName != "" {
			out = append(out, *c.ResourceClaimName)
		}
	}
	return out
}

// usedClaims are the claims a pod uses that exist by name: named ones, and those generated
// from templates once the pod's status names them.
func usedClaims(pod *v1.Pod) []string {
	out := namedClaims(pod)
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil && *s.ResourceClaimName != "" {
			out = append(out, *s.ResourceClaimName)
		}
	}
	return out
}

func (p *Plugin) claim(namespace, name string) (*resourcev1.ResourceClaim, bool) {
	c, err := p.dra.ResourceClaims().Get(namespace, name)
	return c, err == nil && c != nil
}

// missingClaim is the first claim the pod names that does not exist, or "".
func (p *Plugin) missingClaim(pod *v1.Pod) string {
	for _, name := range namedClaims(pod) {
		if _, ok := p.claim(pod.Namespace, name); !ok {
			return name
		}
	}
	return ""
}

// PreEnqueue keeps a gang member out of the active queue while a claim it names does not exist,
// or while some PodGroup of its gang cannot reach minReplicas without members whose claims do
// not exist yet: attempting the gang could only fail at its Permit barrier.
func (p *Plugin) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if p.dra == nil {
		return nil
	}
	key, _, ok := gangcache.GangKey(pod)
	if !ok {
		return nil
	}
	if name := p.missingClaim(pod); name != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for ResourceClaim %s/%s to be created", pod.Namespace, name))
	}
	if !p.gangs.HasClaimants(key) {
		// Gangs without claims (most) skip the scan of their members: PreEnqueue runs for every
		// member when a gang's quorum appears, so the scan would cost O(members²) per gang.
		return nil
	}
	g, found := p.gangs.Get(key)
	if !found {
		return nil
	}
	ready := map[string]int32{}
	waiting := map[string]string{}
	for _, gs := range g.Quorum {
		ready[gs.Name] = gs.Held()
	}
	for _, m := range p.gangs.Pending(key) {
		group := m.Labels[common.LabelPodClique]
		if name := p.missingClaim(m); name != "" {
			if waiting[group] == "" {
				waiting[group] = fmt.Sprintf("ResourceClaim %s/%s of pod %s", m.Namespace, name, m.Name)
			}
			continue
		}
		ready[group]++
	}
	for _, gs := range g.Quorum {
		if ready[gs.Name] < gs.Min && waiting[gs.Name] != "" {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
				"PodGroup %q of the gang needs %d pods but %d have their ResourceClaims: waiting for %s to be created",
				gs.Name, gs.Min, ready[gs.Name], waiting[gs.Name]))
		}
	}
	return nil
}

// quorumMembers are the pending members an attempt of the gang places first: per PodGroup as
// many as it still needs, pod itself first, then by name.
func (p *Plugin) quorumMembers(key string, g gangcache.Gang, pod *v1.Pod) []*v1.Pod {
	pending := p.gangs.Pending(key)
	sort.Slice(pending, func(i, j int) bool {
		if (pending[i].UID == pod.UID) != (pending[j].UID == pod.UID) {
			return pending[i].UID == pod.UID
		}
		return pending[i].Name < pending[j].Name
	})
	remaining := g.Quorum.Remaining()
	_, ownGroup, _ := gangcache.GangKey(pod)
	remaining[ownGroup] = max(remaining[ownGroup], 1)
	var out []*v1.Pod
	for _, m := range pending {
		_, group, _ := gangcache.GangKey(m)
		if remaining[group] > 0 {
			remaining[group]--
			out = append(out, m)
		}
	}
	return out
}

// gangView is what the plugin knows about one gang attempt: the claims of the members it
// places first, which PodGroups use each, and the candidate nodes.
type gangView struct {
	claims   []*resourcev1.ResourceClaim
	groupsOf map[string]sets.Set[string]
	key      string
	nodes    []devices.Node
}

func (p *Plugin) view(key string, g gangcache.Gang, pod *v1.Pod, nodeInfos []fwk.NodeInfo) *gangView {
	v := &gangView{groupsOf: map[string]sets.Set[string]{}, key: placement.NewTree(&g.PodGang.Spec).Root.Required}
	for _, m := range p.quorumMembers(key, g, pod) {
		_, group, _ := gangcache.GangKey(m)
		for _, name := range usedClaims(m) {
			if v.groupsOf[name] == nil {
				c, ok := p.claim(m.Namespace, name)
				if !ok {
					continue
				}
				v.claims = append(v.claims, c)
				v.groupsOf[name] = sets.New[string]()
			}
			v.groupsOf[name].Insert(group)
		}
	}
	if len(v.claims) == 0 {
		return v
	}
	eligible := nodes.EligibilityFor(pod)
	for _, ni := range nodeInfos {
		if n := ni.Node(); eligible(n) {
			v.nodes = append(v.nodes, devices.Node{Name: n.Name, Labels: n.Labels})
		}
	}
	return v
}

// domains evaluates the candidate domains (values of the gang's required key, or all nodes)
// for the devices the unallocated claims still need.
func (p *Plugin) domains(v *gangView) (*devices.Need, []devices.Domain, error) {
	need := devices.NewNeed()
	for _, c := range v.claims {
		need.AddClaim(c)
	}
	if need.Empty() {
		return need, nil, nil
	}
	slices, err := p.dra.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return need, nil, err
	}
	slices = p.withUntracked(slices)
	allocated, err := p.dra.ResourceClaims().ListAllAllocatedDevices()
	if err != nil {
		return need, nil, err
	}
	taken := sets.New[string]()
	for id := range allocated {
		taken.Insert(id.String())
	}
	free := func(id string) bool { return !taken.Has(id) }
	return need, devices.Evaluate(v.key, v.nodes, devices.FromSlices(slices), free, need, p.match), nil
}

// withUntracked adds to the DRA manager's slices those its tracker has not taken in yet (new,
// or at a newer generation) from the scheduler's informer. The queueing hint for a new slice
// runs from that informer, possibly before the tracker has the slice: counting on the tracker
// alone turned the requeued gang away again, on the stale count, with no event left to wake
// it. Taint rules are not applied to such a slice; the DRA Filter still decides.
func (p *Plugin) withUntracked(tracked []*resourcev1.ResourceSlice) []*resourcev1.ResourceSlice {
	if p.informerSlices == nil {
		return tracked
	}
	all, err := p.informerSlices.List(labels.Everything())
	if err != nil {
		return tracked
	}
	generation := make(map[string]int64, len(tracked))
	for _, s := range tracked {
		generation[s.Name] = s.Generation
	}
	out := tracked
	for _, s := range all {
		if g, ok := generation[s.Name]; !ok || s.Generation > g {
			if ok {
				out = slices.DeleteFunc(slices.Clone(out), func(t *resourcev1.ResourceSlice) bool { return t.Name == s.Name })
			}
			out = append(out, s)
		}
	}
	return out
}

// DeviceAdvice makes the plugin the profile's gangcache.DeviceAdvisor: domains that lack the gang's devices are left
// out (unless none has them: PreFilter then says why), and nodes where shared claims' devices
// are allocated pin the PodGroups that use them.
func (p *Plugin) DeviceAdvice(key string, g gangcache.Gang, pod *v1.Pod, nodeInfos []fwk.NodeInfo) gangcache.DeviceAdvice {
	var advice gangcache.DeviceAdvice
	v := p.view(key, g, pod, nodeInfos)
	if len(v.claims) == 0 {
		return advice
	}
	for _, c := range v.claims {
		alloc := c.Status.Allocation
		if alloc == nil || alloc.NodeSelector == nil {
			continue
		}
		reach := devices.MatchingNodes(alloc.NodeSelector, v.nodes)
		if len(reach) == 0 || len(reach) == len(v.nodes) {
			continue
		}
		if advice.Anchors == nil {
			advice.Anchors = map[string][]string{}
		}
		for _, group := range sets.List(v.groupsOf[c.Name]) {
			advice.Anchors[group] = append(advice.Anchors[group], reach...)
		}
	}
	need, doms, err := p.domains(v)
	if err != nil || need.Empty() || v.key == "" {
		return advice
	}
	usable := map[string]bool{}
	feasible := 0
	for _, d := range doms {
		if _, short := d.Short(need); !short {
			feasible++
			for _, n := range d.Nodes {
				usable[n] = true
			}
		}
	}
	if feasible > 0 && feasible < len(doms) {
		advice.Usable = usable
	}
	return advice
}

// PreFilter runs the gang's device count at the start of each attempt (no member assumed): a
// gang whose unallocated claims need more devices of some kind than every candidate domain
// still offers is turned away before any member is assumed. It also reports claims shared by
// more pods than they can be reserved for.
func (p *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfos []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if p.dra == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	key, _, ok := gangcache.GangKey(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	g, found := p.gangs.Get(key)
	if !found || g.Quorum.Assumed() > 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	v := p.view(key, g, pod, nodeInfos)
	if len(v.claims) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	p.reportOvershared(g.PodGang, v.claims)
	need, doms, err := p.domains(v)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if need.Empty() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	msg := shortfall(v.key, need, doms)
	if msg == "" {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	p.event(g.PodGang, common.EventReasonInsufficientDevices, msg)
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

// shortfall says why no domain offers the devices, or "" when one does.
func shortfall(key string, need *devices.Need, doms []devices.Domain) string {
	var best *devices.Domain
	var bestKind devices.Kind
	var bestOffer int64 = -1
	for i := range doms {
		k, short := doms[i].Short(need)
		if !short {
			return ""
		}
		if doms[i].Offers[k] > bestOffer {
			best, bestKind, bestOffer = &doms[i], k, doms[i].Offers[k]
		}
	}
	if best == nil {
		k := need.Kinds()[0]
		return fmt.Sprintf("DRA: the gang's ResourceClaims need %d devices of %s (%s), but no node it may use offers any",
			need.Count[k], k, claimList(need.Claims[k]))
	}
	where := "the nodes it may use offer"
	if key != "" {
		where = fmt.Sprintf("the best %s (%s), %q, offers", placement.DomainNoun(key), key, best.Value)
	}
	return fmt.Sprintf("DRA: the gang's ResourceClaims need %d free devices of %s (%s), but %s %d",
		need.Count[bestKind], bestKind, claimList(need.Claims[bestKind]), where, bestOffer)
}

func claimList(names []string) string {
	const shown = 3
	names = slices.Sorted(slices.Values(names))
	if len(names) <= shown {
		return "claims " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("claims %s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// reportOvershared sends an event for each claim the gang uses that more pods share than the
// claim can be reserved for: the pods beyond that cannot start.
func (p *Plugin) reportOvershared(pg *v1alpha1.PodGang, claims []*resourcev1.ResourceClaim) {
	limit := int(p.args.ReservedForLimit)
	names := sets.New[string]()
	for _, c := range claims {
		names.Insert(c.Name)
	}
	pods, err := p.pods.Pods(pg.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	users := map[string]int{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, name := range sets.New(usedClaims(pod)...).UnsortedList() {
			if names.Has(name) {
				users[name]++
			}
		}
	}
	for _, name := range sets.List(names) {
		if users[name] > limit {
			p.event(pg, common.EventReasonResourceClaimOvershared, fmt.Sprintf(
				"ResourceClaim %s is shared by %d pods, but a ResourceClaim can be reserved for at most %d pods at a time: the pods beyond that cannot start",
				name, users[name], limit))
		}
	}
}

// event sends a Warning event about the PodGang, at most once per interval for one message.
func (p *Plugin) event(pg *v1alpha1.PodGang, reason, msg string) {
	if !p.gangs.ShouldTell(gangcache.KeyOf(pg), reason+"|"+msg, time.Now(), eventInterval) {
		return
	}
	ref := &v1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGang",
		Namespace: pg.Namespace, Name: pg.Name, UID: pg.UID}
	if r := p.handle.EventRecorder(); r != nil {
		r.Eventf(ref, nil, v1.EventTypeWarning, reason, "Scheduling", "%s", msg)
	}
}

// PreFilterExtensions is not needed: the count is about the whole gang.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// SignPod: pods without claims are all alike to this plugin; pods with claims depend on them
// (DynamicResources makes them unsignable too).
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, nil
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, "pods with ResourceClaims are placed one by one")
}
