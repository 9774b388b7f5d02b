package charts

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Permission is one grant of grove-operator's RBAC and why the operator holds it.
type Permission struct {
	// Scope is "cluster" (a ClusterRole bound cluster-wide) or "release namespace" (the Role in
	// the namespace the operator runs in).
	Scope     string
	Group     string
	Resources []string
	// ResourceNames limits the grant to objects of these names (values of the chart's
	// defaults; the chart follows the configured names).
	ResourceNames []string
	Verbs         []string
	// Backend is the scheduler profile that needs the grant; the chart renders it only while
	// config.scheduler.profiles enables it. Empty: always rendered.
	Backend string
	Why     string
}

const (
	scopeCluster   = "cluster"
	scopeNamespace = "release namespace"
)

// OperatorPermissions is every verb grove-operator holds, and why: the one list the chart's
// rendered RBAC is checked against (TestOperatorRBACIsTheTable) and the docs' "What
// grove-operator can do" table is made from (PermissionsTable). A grant the chart renders that
// is not here fails the test; so does an entry here that no chart values render.
var OperatorPermissions = []Permission{
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"podcliquesets"}, Verbs: []string{"get", "list", "watch", "patch"},
		Why: "reads what users declare; patch adds and removes its finalizer"},
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"podcliques", "podcliquescalinggroups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "the PodCliqueSet's children; only those it created (its labels and controller reference) are patched or deleted"},
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"podcliquesets/status", "podcliques/status", "podcliquescalinggroups/status", "clustertopologies/status", "clustertopologybindings/status"},
		Verbs: []string{"patch"}, Why: "reports status"},
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"podcliquesets/finalizers", "podcliques/finalizers", "podcliquescalinggroups/finalizers", "clustertopologybindings/finalizers"},
		Verbs: []string{"update"}, Why: "owner references with blockOwnerDeletion (OwnerReferencesPermissionEnforcement)"},
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"clustertopologies"}, Verbs: []string{"get", "list", "watch", "create", "patch"},
		Why: "ClusterTopologies of the configured topology profiles and of ClusterTopologyBindings; never deleted"},
	{Scope: scopeCluster, Group: "grove.io", Resources: []string{"clustertopologybindings"}, Verbs: []string{"get", "list", "watch"},
		Why: "translates upstream Grove's ClusterTopologyBindings"},
	{Scope: scopeCluster, Group: "scheduler.grove.io", Resources: []string{"podgangs"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "one PodGang per gang, for the scheduler; only its own are patched or deleted"},
	{Scope: scopeCluster, Group: "scheduler.grove.io", Resources: []string{"podgangs/status"}, Verbs: []string{"patch"},
		Why: "the Initialized, Unhealthy, Ready and MemberReplacing conditions"},
	{Scope: scopeCluster, Group: "", Resources: []string{"pods", "services", "serviceaccounts"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "the pods, the headless Service of each replica, the ServiceAccount the startup waiter runs as; only its own are patched or deleted"},
	{Scope: scopeCluster, Group: "rbac.authorization.k8s.io", Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "per PodCliqueSet, a Role that may read pods bound to its own ServiceAccount (the startup waiter); only its own"},
	{Scope: scopeCluster, Group: "autoscaling", Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "the autoscalers of autoScalingConfig / scaleConfig; only its own"},
	{Scope: scopeCluster, Group: "resource.k8s.io", Resources: []string{"resourceclaims"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "claims of resourceSharing entries; only its own"},
	{Scope: scopeCluster, Group: "resource.k8s.io", Resources: []string{"resourceclaimtemplates"}, Verbs: []string{"get"},
		Why: "the templates resourceSharing entries name"},
	{Scope: scopeCluster, Group: "scheduling.k8s.io", Resources: []string{"priorityclasses"}, Verbs: []string{"get", "list", "watch"},
		Why: "reports a PriorityClass the pods name that does not exist"},
	{Scope: scopeCluster, Group: "", Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"},
		Why: "replaces the pods of a failed node (NotReady, unreachable or deleted); nodes are never written"},
	{Scope: scopeCluster, Group: "scheduling.k8s.io", Resources: []string{"podgroups", "compositepodgroups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "default-scheduler backend (always on): the Workload API's gang objects"},
	{Scope: scopeCluster, Group: "admissionregistration.k8s.io", Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
		ResourceNames: []string{"grove-defaulting-webhook", "grove-validating-webhook"}, Verbs: []string{"get", "update"},
		Why: "injects the CA bundle into its own webhook configurations (certProvisionMode auto)"},
	{Scope: scopeCluster, Group: "", Resources: []string{"events"}, Verbs: []string{"create", "patch"}, Why: "events"},
	{Scope: scopeCluster, Group: "events.k8s.io", Resources: []string{"events"}, Verbs: []string{"create", "patch"}, Why: "events"},
	{Scope: scopeCluster, Group: "authentication.k8s.io", Resources: []string{"tokenreviews"}, Verbs: []string{"create"},
		Why: "authenticates /metrics scrapers"},
	{Scope: scopeCluster, Group: "authorization.k8s.io", Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"},
		Why: "authorises /metrics scrapers"},
	{Scope: scopeCluster, Backend: "kai-scheduler", Group: "scheduling.run.ai", Resources: []string{"podgroups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "KAI PodGroups, one per PodGang"},
	{Scope: scopeCluster, Backend: "kai-scheduler", Group: "kai.scheduler", Resources: []string{"topologies"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "KAI Topologies of the ClusterTopologies Grove manages"},
	{Scope: scopeCluster, Backend: "koord-scheduler", Group: "scheduling.sigs.k8s.io", Resources: []string{"podgroups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "Koordinator gang PodGroups, one per Grove PodGroup"},
	{Scope: scopeCluster, Backend: "koord-scheduler", Group: "scheduling.koordinator.sh", Resources: []string{"clusternetworktopologies"}, Verbs: []string{"get", "list", "watch"},
		Why: "drift check of Koordinator's network topology"},
	{Scope: scopeCluster, Backend: "volcano", Group: "scheduling.volcano.sh", Resources: []string{"podgroups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "Volcano PodGroups, one per PodGang"},
	{Scope: scopeCluster, Backend: "volcano", Group: "scheduling.volcano.sh", Resources: []string{"queues"}, Verbs: []string{"get", "list"},
		Why: "the Volcano Queue a PodGroup names"},
	{Scope: scopeNamespace, Group: "coordination.k8s.io", Resources: []string{"leases"}, Verbs: []string{"create"},
		Why: "its leader-election lease (create cannot be limited by name)"},
	{Scope: scopeNamespace, Group: "coordination.k8s.io", Resources: []string{"leases"}, ResourceNames: []string{"grove-operator-leader-election"}, Verbs: []string{"get", "update"},
		Why: "its leader-election lease"},
	{Scope: scopeNamespace, Group: "", Resources: []string{"secrets"}, Verbs: []string{"create"},
		Why: "its webhook certificate (certProvisionMode auto); the only Secret it writes"},
	{Scope: scopeNamespace, Group: "", Resources: []string{"secrets"}, ResourceNames: []string{"grove-webhook-server-cert"}, Verbs: []string{"get", "update"},
		Why: "its webhook certificate; the only Secret it reads"},
}

// PermissionsTable is OperatorPermissions as a Markdown table, for the docs.
func PermissionsTable() string {
	var b strings.Builder
	b.WriteString("| Scope | API group | Resources | Verbs | Only when | Why |\n|---|---|---|---|---|---|\n")
	for _, p := range OperatorPermissions {
		group := p.Group
		if group == "" {
			group = "core"
		}
		resources := strings.Join(p.Resources, ", ")
		if len(p.ResourceNames) > 0 {
			resources += " (named " + strings.Join(p.ResourceNames, ", ") + ")"
		}
		when := "always"
		if p.Backend != "" {
			when = p.Backend + " profile enabled"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.Scope, group, resources, strings.Join(p.Verbs, ", "), when, p.Why)
	}
	return b.String()
}

// Grant is one verb on one resource (of some names, or all) in one scope:
// "scope | group | resource | names | verb".
type Grant string

func grantOf(scope, group, resource string, names []string, verb string) Grant {
	n := slices.Clone(names)
	sort.Strings(n)
	return Grant(fmt.Sprintf("%s | %s | %s | %s | %s", scope, group, resource, strings.Join(n, ","), verb))
}

// TableGrants are the grants of OperatorPermissions, with the backend grants of the given
// profiles only (nil: every backend).
func TableGrants(backends []string) map[Grant]bool {
	out := map[Grant]bool{}
	for _, p := range OperatorPermissions {
		if p.Backend != "" && backends != nil && !slices.Contains(backends, p.Backend) {
			continue
		}
		for _, r := range p.Resources {
			for _, v := range p.Verbs {
				out[grantOf(p.Scope, p.Group, r, p.ResourceNames, v)] = true
			}
		}
	}
	return out
}

// OperatorGrants are the grants that objs (rendered or read from a cluster: ClusterRoles,
// Roles and their bindings) give the ServiceAccount serviceAccount of namespace, through every
// (Cluster)RoleBinding that names it.
func OperatorGrants(objs []*unstructured.Unstructured, serviceAccount, namespace string) (map[Grant]bool, error) {
	roles := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	out := map[Grant]bool{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		}) {
			continue
		}
		scope, roleKey := scopeCluster, "ClusterRole//"+b.RoleRef.Name
		if o.GetKind() == "RoleBinding" {
			scope, roleKey = scopeNamespace, b.RoleRef.Kind+"/"+o.GetNamespace()+"/"+b.RoleRef.Name
			if b.RoleRef.Kind == "ClusterRole" {
				roleKey = "ClusterRole//" + b.RoleRef.Name
			}
		}
		role, ok := roles[roleKey]
		if !ok {
			return nil, fmt.Errorf("%s %s binds %s, which is not there", o.GetKind(), o.GetName(), roleKey)
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, &r); err != nil {
			return nil, err
		}
		for _, rule := range r.Rules {
			if len(rule.NonResourceURLs) > 0 {
				return nil, fmt.Errorf("%s grants non-resource URLs, which the table does not cover", roleKey)
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						out[grantOf(scope, g, res, rule.ResourceNames, v)] = true
					}
				}
			}
		}
	}
	return out, nil
}
