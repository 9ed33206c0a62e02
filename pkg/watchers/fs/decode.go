package fs

import (
	"sync"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
)

// DecodeV1alpha1 decodes a definition file of muster's
// muster.giantswarm.io/v1alpha1 MCPServers and Workflows, strictly but
// for the unknown fields it warns of (see v1alpha1.DecodeFile), into the
// index's documents.
func DecodeV1alpha1(path string, data []byte) ([]resources.Doc, error) {
	scratch := decodedDocuments.Get().(*[]v1alpha1.Document)
	defer putDecodedDocuments(scratch)
	docs, err := v1alpha1.AppendFile((*scratch)[:0], path, data)
	*scratch = docs
	if err != nil {
		return nil, err
	}
	out := make([]resources.Doc, len(docs))
	for i, d := range docs {
		out[i] = resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()}
	}
	return out, nil
}

// decodedDocuments holds the slices DecodeV1alpha1 decodes into, so that
// a scan's files do not each allocate one (v1alpha1.AppendFile says why).
var decodedDocuments = sync.Pool{New: func() any { return new([]v1alpha1.Document) }}

// maxPooledDocuments is the longest slice put back in decodedDocuments: a
// file of thousands of documents does not keep their slice for ever.
const maxPooledDocuments = 64

func putDecodedDocuments(scratch *[]v1alpha1.Document) {
	if cap(*scratch) > maxPooledDocuments {
		return
	}
	clear(*scratch) // the definitions are the index's now, not the pool's
	*scratch = (*scratch)[:0]
	decodedDocuments.Put(scratch)
}
