// olm-validate runs OLM's own bundle validators on a bundle directory, the way
// `operator-sdk bundle validate` v1.42.3 does: operator-registry's format check,
// the registry+v1 object check, then operator-framework/api's Bundle, CSV and CRD
// validators, plus the optional validators chosen with --select-optional.
// The project's tests use it as the reference judge for our TypeScript validator.
//
//	olm-validate [--select-optional suite=operatorframework|name=<validator>] <bundle-dir>
//
// Prints one JSON document ({"passed": bool, "outputs": [{type, message, field}]})
// and exits 1 when there is an error, 0 with warnings only, 2 when it cannot run.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/sirupsen/logrus"
	k8svalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type output struct {
	Type    string `json:"type"`
	Source  string `json:"source"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

type report struct {
	Passed  bool     `json:"passed"`
	Outputs []output `json:"outputs"`
}

type optional struct {
	name, suite string
	v           interfaces.Validator
}

// The optional validators operator-sdk v1.42.3 offers, with its names and suite labels.
var optionals = []optional{
	{"operatorhubv2", "operatorframework", apivalidation.OperatorHubV2Validator},
	{"capabilities", "operatorframework", apivalidation.StandardCapabilitiesValidator},
	{"categories", "operatorframework", apivalidation.StandardCategoriesValidator},
	{"alpha-deprecated-apis", "operatorframework", apivalidation.AlphaDeprecatedAPIsValidator},
	{"good-practices", "operatorframework", apivalidation.GoodPracticesValidator},
	{"multiarch", "", apivalidation.MultipleArchitecturesValidator},
}

func main() {
	sel := flag.String("select-optional", "", "suite=operatorframework or name=<validator>")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: olm-validate [--select-optional suite=operatorframework] <bundle-dir>")
		os.Exit(2)
	}
	rep, err := validate(flag.Arg(0), *sel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
	if !rep.Passed {
		os.Exit(1)
	}
}

func validate(dir, sel string) (*report, error) {
	rep := &report{Outputs: []output{}}
	add := func(kind, source, fieldPath, msg string) {
		rep.Outputs = append(rep.Outputs, output{Type: kind, Source: source, Field: fieldPath, Message: msg})
	}
	addResults := func(source string, results []apierrors.ManifestResult) {
		for _, r := range results {
			for _, e := range r.Errors {
				add("error", source, e.Field, e.Error())
			}
			for _, e := range r.Warnings {
				add("warning", source, e.Field, e.Error())
			}
		}
	}

	logger := logrus.New()
	logger.SetOutput(io.Discard)
	val := registrybundle.NewImageValidator(nil, logrus.NewEntry(logger))
	if err := val.ValidateBundleFormat(dir); err != nil {
		var verr registrybundle.ValidationError
		if errors.As(err, &verr) {
			for _, e := range verr.Errors {
				add("error", "format", "", e.Error())
			}
		} else {
			add("error", "format", "", err.Error())
		}
	}

	manifestsDir := filepath.Join(dir, strings.TrimSuffix(registrybundle.ManifestsDir, "/"))
	mediaType, err := registrybundle.GetMediaType(manifestsDir)
	if err != nil {
		add("error", "format", "", err.Error())
		return finish(rep), nil
	}
	bundle, err := apimanifests.GetBundleFromDir(manifestsDir)
	if err != nil {
		add("error", "bundle", "", err.Error())
		return finish(rep), nil
	}

	for _, u := range bundle.Objects {
		gvk := u.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "ClusterServiceVersion" || gvk.Kind == "CustomResourceDefinition" {
			continue
		}
		if ok, _ := registrybundle.IsSupported(gvk.Kind); mediaType == registrybundle.RegistryV1Type && !ok {
			add("error", "objects", "kind", fmt.Sprintf("%s %q: kind is not supported in a registry+v1 bundle", gvk.Kind, u.GetName()))
			continue
		}
		noPrefix := func(string, bool) []string { return nil }
		if errs := k8svalidation.ValidateObjectMetaAccessor(metav1.Object(u), false, noPrefix, field.NewPath("metadata")); len(errs) > 0 {
			add("error", "objects", "metadata", fmt.Sprintf("%s %q: %s", gvk.Kind, u.GetName(), errs.ToAggregate()))
		}
	}

	addResults("bundle", apivalidation.BundleValidator.Validate(bundle))
	if bundle.CSV != nil {
		addResults("csv", apivalidation.ClusterServiceVersionValidator.Validate(bundle.CSV))
	} else {
		add("error", "bundle", "", "no ClusterServiceVersion in bundle")
	}
	var crds []any
	for _, crd := range bundle.V1beta1CRDs {
		crds = append(crds, crd)
	}
	for _, crd := range bundle.V1CRDs {
		crds = append(crds, crd)
	}
	if len(crds) > 0 {
		addResults("crd", apivalidation.CustomResourceDefinitionValidator.Validate(crds...))
	}

	if sel != "" {
		key, value, ok := strings.Cut(sel, "=")
		if !ok || (key != "suite" && key != "name") {
			return nil, fmt.Errorf("--select-optional %q: expected suite=<suite> or name=<validator>", sel)
		}
		objs := bundle.ObjectsToValidate()
		for _, obj := range bundle.Objects {
			objs = append(objs, obj)
		}
		objs = append(objs, map[string]string{})
		matched := false
		for _, o := range optionals {
			if (key == "suite" && o.suite == value) || (key == "name" && o.name == value) {
				matched = true
				addResults(o.name, o.v.Validate(objs...))
			}
		}
		if !matched {
			return nil, fmt.Errorf("--select-optional %q matches no validator", sel)
		}
	}
	return finish(rep), nil
}

func finish(rep *report) *report {
	rep.Passed = true
	for _, o := range rep.Outputs {
		if o.Type == "error" {
			rep.Passed = false
		}
	}
	return rep
}
