package koordinator

import (
	"fmt"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// PodGroupName is the Koordinator PodGroup of one PodGroup of a PodGang: "<podgang>-<podgroup>",
// shortened (common.ShortenLabelValue) when longer than 63 characters, because pods find their
// PodGroup through a label whose value is this name.
func PodGroupName(podGang, podGroup string) string {
	return common.ShortenLabelValue(fmt.Sprintf("%s-%s", podGang, podGroup))
}
