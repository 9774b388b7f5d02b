// Command schema prints the OpenAPI v2 definitions of Grove's CRD kinds and of the Kubernetes
// types they embed, keyed by OpenAPI model name. applyconfiguration-gen (make clients) reads
// them to embed the structured-merge schema of each kind in pkg/client/applyconfiguration: the
// fake clientset's server-side apply and the Extract functions need it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	groveopenapi "github.com/ai-dynamo/grove/hack/clientgen/openapi"
)

func main() {
	if err := json.NewEncoder(os.Stdout).Encode(definitions()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// modelName is the OpenAPI name of a type: Kubernetes' definitions already use model names
// (io.k8s.api.core.v1.PodSpec), Grove's use Go import paths, which are turned into the same
// form (com.github.ai-dynamo.grove.pkg.api...) that applyconfiguration-gen looks up.
func modelName(name string) string {
	if strings.Contains(name, "/") {
		return util.ToRESTFriendlyName(name)
	}
	return name
}

func definitions() *spec.Swagger {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + modelName(name)) }
	defs := map[string]spec.Schema{}
	for _, all := range []map[string]common.OpenAPIDefinition{kubeopenapi.GetOpenAPIDefinitions(ref), groveopenapi.GetOpenAPIDefinitions(ref)} {
		for name, def := range all {
			schema := def.Schema
			// A type that embeds a separate v2 form (for OpenAPI v3-only constructs) is written
			// in that form: the output is OpenAPI v2.
			if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
				schema = v2
			}
			defs[modelName(name)] = schema
		}
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{Swagger: "2.0", Definitions: defs,
		Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Grove", Version: "unversioned"}}}}
}
