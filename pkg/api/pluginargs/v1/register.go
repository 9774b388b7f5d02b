package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
)

// Defaults of the plugin arguments.
const (
	DefaultPermitWaitTimeout     = 60 * time.Second
	DefaultMaxBackoff            = 30 * time.Second
	DefaultReservationDelay      = 30 * time.Second
	DefaultPreferredDomainWeight = int32(70)
	DefaultReservedForLimit      = int32(256)
)

// SchemeGroupVersion is kube-scheduler's config group version.
var SchemeGroupVersion = schema.GroupVersion{Group: "kubescheduler.config.k8s.io", Version: "v1"}

var (
	// localSchemeBuilder is kube-scheduler's v1 builder, so defaulting and conversion of
	// pluginConfig args find these kinds.
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	ownSchemeBuilder   = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addConversionFuncs)
	// AddToScheme adds only Grove's v1 args kinds, defaults and conversions to a scheme.
	AddToScheme = ownSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addConversionFuncs)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &GangArgs{}, &TopologyArgs{}, &DRAArgs{})
	return nil
}

// SetDefaults_GangArgs fills unset GangArgs fields.
//
//nolint:revive,staticcheck // apimachinery defaulter naming convention.
func SetDefaults_GangArgs(a *GangArgs) {
	if a.PermitWaitTimeout == nil {
		a.PermitWaitTimeout = &metav1.Duration{Duration: DefaultPermitWaitTimeout}
	}
	if a.MaxBackoff == nil {
		a.MaxBackoff = &metav1.Duration{Duration: DefaultMaxBackoff}
	}
	if a.ReservationDelay == nil {
		a.ReservationDelay = &metav1.Duration{Duration: DefaultReservationDelay}
	}
}

// SetDefaults_TopologyArgs fills unset TopologyArgs fields.
//
//nolint:revive,staticcheck // apimachinery defaulter naming convention.
func SetDefaults_TopologyArgs(a *TopologyArgs) {
	if a.PreferredDomainWeight == nil {
		a.PreferredDomainWeight = ptr.To(DefaultPreferredDomainWeight)
	}
}

// SetDefaults_DRAArgs fills unset DRAArgs fields.
//
//nolint:revive,staticcheck // apimachinery defaulter naming convention.
func SetDefaults_DRAArgs(a *DRAArgs) {
	if a.ReservedForLimit == nil {
		a.ReservedForLimit = ptr.To(DefaultReservedForLimit)
	}
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	scheme.AddTypeDefaultingFunc(&GangArgs{}, func(o any) { SetDefaults_GangArgs(o.(*GangArgs)) })
	scheme.AddTypeDefaultingFunc(&TopologyArgs{}, func(o any) { SetDefaults_TopologyArgs(o.(*TopologyArgs)) })
	scheme.AddTypeDefaultingFunc(&DRAArgs{}, func(o any) { SetDefaults_DRAArgs(o.(*DRAArgs)) })
	return nil
}

func durationOrZero(d *metav1.Duration) metav1.Duration {
	if d == nil {
		return metav1.Duration{}
	}
	return *d
}

func addConversionFuncs(scheme *runtime.Scheme) error {
	if err := scheme.AddConversionFunc((*GangArgs)(nil), (*pluginargs.GangArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*GangArgs), b.(*pluginargs.GangArgs)
		out.PermitWaitTimeout = durationOrZero(in.PermitWaitTimeout)
		out.MaxBackoff = durationOrZero(in.MaxBackoff)
		out.ReservationDelay = durationOrZero(in.ReservationDelay)
		return nil
	}); err != nil {
		return err
	}
	if err := scheme.AddConversionFunc((*pluginargs.GangArgs)(nil), (*GangArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*pluginargs.GangArgs), b.(*GangArgs)
		out.PermitWaitTimeout = ptr.To(in.PermitWaitTimeout)
		out.MaxBackoff = ptr.To(in.MaxBackoff)
		out.ReservationDelay = ptr.To(in.ReservationDelay)
		return nil
	}); err != nil {
		return err
	}
	if err := scheme.AddConversionFunc((*TopologyArgs)(nil), (*pluginargs.TopologyArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*TopologyArgs), b.(*pluginargs.TopologyArgs)
		out.PreferredDomainWeight = ptr.Deref(in.PreferredDomainWeight, 0)
		return nil
	}); err != nil {
		return err
	}
	if err := scheme.AddConversionFunc((*pluginargs.TopologyArgs)(nil), (*TopologyArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*pluginargs.TopologyArgs), b.(*TopologyArgs)
		out.PreferredDomainWeight = ptr.To(in.PreferredDomainWeight)
		return nil
	}); err != nil {
		return err
	}
	if err := scheme.AddConversionFunc((*DRAArgs)(nil), (*pluginargs.DRAArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*DRAArgs), b.(*pluginargs.DRAArgs)
		out.ReservedForLimit = ptr.Deref(in.ReservedForLimit, 0)
		return nil
	}); err != nil {
		return err
	}
	return scheme.AddConversionFunc((*pluginargs.DRAArgs)(nil), (*DRAArgs)(nil), func(a, b any, _ conversion.Scope) error {
		in, out := a.(*pluginargs.DRAArgs), b.(*DRAArgs)
		out.ReservedForLimit = ptr.To(in.ReservedForLimit)
		return nil
	})
}
