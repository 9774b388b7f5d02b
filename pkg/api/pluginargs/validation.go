package pluginargs

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxPermitWaitTimeoutSeconds is kube-scheduler's cap on a Permit wait (15 minutes).
const MaxPermitWaitTimeoutSeconds = 15 * 60

// ValidateGangArgs checks GangArgs.
func ValidateGangArgs(path *field.Path, a *GangArgs) error {
	var errs field.ErrorList
	if a.PermitWaitTimeout.Duration <= 0 || a.PermitWaitTimeout.Seconds() > MaxPermitWaitTimeoutSeconds {
		errs = append(errs, field.Invalid(path.Child("permitWaitTimeout"), a.PermitWaitTimeout.String(), "must be positive and at most 15m"))
	}
	if a.MaxBackoff.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("maxBackoff"), a.MaxBackoff.String(), "must be positive"))
	}
	if a.ReservationDelay.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("reservationDelay"), a.ReservationDelay.String(), "must not be negative (0s turns reservations off)"))
	}
	return errs.ToAggregate()
}

// ValidateTopologyArgs checks TopologyArgs.
func ValidateTopologyArgs(path *field.Path, a *TopologyArgs) error {
	if a.PreferredDomainWeight < 0 || a.PreferredDomainWeight > 100 {
		return field.ErrorList{field.Invalid(path.Child("preferredDomainWeight"), a.PreferredDomainWeight, "must be between 0 and 100")}.ToAggregate()
	}
	return nil
}

// ValidateDRAArgs checks DRAArgs.
func ValidateDRAArgs(path *field.Path, a *DRAArgs) error {
	if a.ReservedForLimit < 1 || a.ReservedForLimit > 256 {
		return field.ErrorList{field.Invalid(path.Child("reservedForLimit"), a.ReservedForLimit, "must be between 1 and 256 (the API's limit)")}.ToAggregate()
	}
	return nil
}
