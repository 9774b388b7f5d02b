package controller_test

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusManagers are the field managers that wrote the object's status subresource, as the
// apiserver records them in managedFields.
func statusManagers(obj client.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "status" && !slices.Contains(out, f.Manager) {
			out = append(out, f.Manager)
		}
	}
	sort.Strings(out)
	return out
}

// conditionOwners maps each status condition type to the field managers that own an entry
// of it (conditions are a list keyed by type).
func conditionOwners(t require.TestingT, obj client.Object) map[string][]string {
	out := map[string][]string{}
	for _, f := range obj.GetManagedFields() {
		if f.Subresource != "status" || f.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				Conditions map[string]json.RawMessage `json:"f:conditions"`
			} `json:"f:status"`
		}
		require.NoError(t, json.Unmarshal(f.FieldsV1.GetRawBytes(), &fields))
		for key := range fields.Status.Conditions {
			var k struct{ Type string }
			if rest, ok := strings.CutPrefix(key, "k:"); ok && json.Unmarshal([]byte(rest), &k) == nil && k.Type != "" {
				out[k.Type] = append(out[k.Type], f.Manager)
				sort.Strings(out[k.Type])
			}
		}
	}
	return out
}
