package plugins

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/ai-dynamo/grove/plugins/dra"
	"github.com/ai-dynamo/grove/plugins/gang"
	"github.com/ai-dynamo/grove/plugins/topology"
)

// needsGang are the plugins that work only next to the gang plugin of their profile: they read
// the gang records it keeps (which members hold nodes, the attempt under way) and leave
// attempts, barriers and back-off to it.
var needsGang = []string{topology.Name, dra.Name}

// ValidateProfiles checks that every profile of a (decoded, defaulted) kube-scheduler
// configuration that enables Topology or DRA at any extension point enables Gang too.
func ValidateProfiles(cfg *schedconfig.KubeSchedulerConfiguration) field.ErrorList {
	var errs field.ErrorList
	for i, prof := range cfg.Profiles {
		if prof.Plugins == nil {
			continue
		}
		path := field.NewPath("profiles").Index(i).Child("plugins")
		if _, hasGang := enabledAt(prof.Plugins, path, gang.Name); hasGang {
			continue
		}
		for _, name := range needsGang {
			if where, ok := enabledAt(prof.Plugins, path, name); ok {
				errs = append(errs, field.Invalid(where, name, fmt.Sprintf(
					"%s needs %s: enable %s in profile %q too", name, gang.Name, gang.Name, prof.SchedulerName)))
			}
		}
	}
	return errs
}

// enabledAt returns where plugin name is first enabled in plugins (multiPoint first, then the
// extension points in kube-scheduler's order). The path names the list, not an index: the
// decoded lists hold kube-scheduler's default plugins merged with the file's.
func enabledAt(plugins *schedconfig.Plugins, path *field.Path, name string) (*field.Path, bool) {
	sets := []struct {
		field string
		set   schedconfig.PluginSet
	}{
		{"multiPoint", plugins.MultiPoint}, {"preEnqueue", plugins.PreEnqueue}, {"queueSort", plugins.QueueSort},
		{"preFilter", plugins.PreFilter}, {"filter", plugins.Filter}, {"postFilter", plugins.PostFilter},
		{"preScore", plugins.PreScore}, {"score", plugins.Score}, {"reserve", plugins.Reserve},
		{"permit", plugins.Permit}, {"preBind", plugins.PreBind}, {"bind", plugins.Bind}, {"postBind", plugins.PostBind},
	}
	for _, s := range sets {
		for _, p := range s.set.Enabled {
			if p.Name == name {
				return path.Child(s.field, "enabled"), true
			}
		}
	}
	return nil, false
}
