package declare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// KubeOptions configures a Kube store.
type KubeOptions struct {
	// Client reaches the API server, with the v1alpha1 types in its
	// scheme. Required.
	Client client.Client
}

// Kube is Kubernetes mode's store: the MCPServer and Workflow custom
// resources, changed under the API server's optimistic concurrency (a
// stale resourceVersion is a ConflictError) and the RBAC of config/rbac.
type Kube struct {
	opts KubeOptions
}

var _ Store = (*Kube)(nil)

// NewKube returns the store of opts.Client.
func NewKube(opts KubeOptions) (*Kube, error) {
	if opts.Client == nil {
		return nil, errors.New("declare: KubeOptions.Client is required")
	}
	return &Kube{opts: opts}, nil
}

// Mode is ModeKubernetes.
func (s *Kube) Mode() string { return ModeKubernetes }

func newObject(kind string) v1alpha1.Object {
	if kind == v1alpha1.KindMCPServer {
		return &v1alpha1.MCPServer{}
	}
	return &v1alpha1.Workflow{}
}

// specOf is obj's spec as plain values.
func specOf(obj v1alpha1.Object) (map[string]any, error) {
	var spec any
	switch o := obj.(type) {
	case *v1alpha1.MCPServer:
		spec = o.Spec
	case *v1alpha1.Workflow:
		spec = o.Spec
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(data, &out)
}

// setSpec decodes spec, validated already, into obj's spec.
func setSpec(obj v1alpha1.Object, spec map[string]any) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *v1alpha1.MCPServer:
		o.Spec = v1alpha1.MCPServerSpec{}
		return json.Unmarshal(data, &o.Spec)
	case *v1alpha1.Workflow:
		o.Spec = v1alpha1.WorkflowSpec{}
		return json.Unmarshal(data, &o.Spec)
	}
	return nil
}

func where(key events.Key) string { return key.Namespace + "/" + key.Name }

// definition is what the API server holds of obj.
func definition(key events.Key, obj v1alpha1.Object) (Definition, error) {
	spec, err := specOf(obj)
	if err != nil {
		return Definition{}, err
	}
	return Definition{Key: key, Spec: spec, Object: obj, Version: obj.GetResourceVersion(), Where: where(key),
		UID: string(obj.GetUID()), Generation: obj.GetGeneration(), Extra: metadataOf(obj)}, nil
}

func metadataOf(obj v1alpha1.Object) map[string]any {
	meta := map[string]any{}
	if l := obj.GetLabels(); len(l) > 0 {
		meta["labels"] = toAny(l)
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = toAny(a)
	}
	return map[string]any{"metadata": meta}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Get reads key's resource.
func (s *Kube) Get(ctx context.Context, key events.Key) (Definition, error) {
	key = key.Canonical()
	if err := checkKey(key); err != nil {
		return Definition{}, err
	}
	obj := newObject(key.Kind)
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Definition{}, &NotFoundError{Key: key}
		}
		return Definition{}, fmt.Errorf("get %s %s: %w", key.Kind, where(key), err)
	}
	return definition(key, obj)
}

// Create creates key's resource with spec.
func (s *Kube) Create(ctx context.Context, key events.Key, spec map[string]any, meta ...Meta) (Definition, error) {
	key = key.Canonical()
	if _, _, err := Validate(key, spec, metaExtra(meta)); err != nil {
		return Definition{}, err
	}
	// Files may have names with underscores; an API server refuses them.
	if msgs := validation.IsDNS1123Subdomain(key.Name); len(msgs) > 0 {
		return Definition{}, &InvalidError{Key: key, Errs: v1alpha1.FieldErrors{{Field: "metadata.name", Msg: fmt.Sprintf("%q is not a valid Kubernetes name: %s", key.Name, strings.Join(msgs, "; "))}}}
	}
	obj := newObject(key.Kind)
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	for _, m := range meta {
		if len(m.Annotations) > 0 {
			annotations := obj.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			maps.Copy(annotations, m.Annotations)
			obj.SetAnnotations(annotations)
		}
	}
	if err := setSpec(obj, spec); err != nil {
		return Definition{}, &InvalidError{Key: key, Msg: scrub(spec, err.Error())}
	}
	if err := s.opts.Client.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return Definition{}, &ExistsError{Key: key, Where: where(key)}
		}
		return Definition{}, fmt.Errorf("create %s %s: %s", key.Kind, where(key), scrub(spec, err.Error()))
	}
	return definition(key, obj)
}

// Update merges patch into key's spec and updates the resource at the
// resourceVersion read, or the one the caller names.
func (s *Kube) Update(ctx context.Context, key events.Key, patch map[string]any, version string) (Definition, error) {
	cur, err := s.Get(ctx, key)
	if err != nil {
		return Definition{}, err
	}
	key = cur.Key
	if version != "" && version != cur.Version {
		return Definition{}, &ConflictError{Key: key, Where: cur.Where, Expected: version, Found: cur.Version}
	}
	spec := merge(cur.Spec, patch)
	if _, _, err := Validate(key, spec, cur.Extra); err != nil {
		return Definition{}, err
	}
	obj := cur.Object.DeepCopyObject().(v1alpha1.Object)
	if err := setSpec(obj, spec); err != nil {
		return Definition{}, &InvalidError{Key: key, Msg: scrub(spec, err.Error())}
	}
	obj.SetResourceVersion(cur.Version)
	if err := s.opts.Client.Update(ctx, obj); err != nil {
		switch {
		case apierrors.IsConflict(err):
			return Definition{}, &ConflictError{Key: key, Where: cur.Where, Expected: cur.Version, Found: "a newer resourceVersion"}
		case apierrors.IsNotFound(err):
			return Definition{}, &NotFoundError{Key: key}
		}
		return Definition{}, fmt.Errorf("update %s %s: %s", key.Kind, cur.Where, scrub(spec, err.Error()))
	}
	return definition(key, obj)
}

// Delete deletes key's resource if it is still at the resourceVersion
// read, or the one the caller names.
func (s *Kube) Delete(ctx context.Context, key events.Key, version string) error {
	cur, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	key = cur.Key
	if version == "" {
		version = cur.Version
	}
	err = s.opts.Client.Delete(ctx, cur.Object, client.Preconditions{ResourceVersion: &version, UID: ptrUID(cur.Object)})
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		return &ConflictError{Key: key, Where: cur.Where, Expected: version, Found: cur.Version}
	case apierrors.IsNotFound(err):
		return &NotFoundError{Key: key}
	}
	return fmt.Errorf("delete %s %s: %w", key.Kind, cur.Where, err)
}

func ptrUID(obj v1alpha1.Object) *types.UID {
	uid := obj.GetUID()
	return &uid
}
