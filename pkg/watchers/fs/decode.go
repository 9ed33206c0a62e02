package fs

import (
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
)

// DecodeV1alpha1 decodes a definition file of muster's
// muster.giantswarm.io/v1alpha1 MCPServers and Workflows, strictly (see
// v1alpha1.DecodeFile), into the index's documents.
func DecodeV1alpha1(path string, data []byte) ([]resources.Doc, error) {
	docs, err := v1alpha1.DecodeFile(path, data)
	if err != nil {
		return nil, err
	}
	out := make([]resources.Doc, len(docs))
	for i, d := range docs {
		out[i] = resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err}
	}
	return out, nil
}
