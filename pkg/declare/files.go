package declare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// FilesOptions configures a Files store.
type FilesOptions struct {
	// ConfigDir holds mcpservers/ and workflows/. Required.
	ConfigDir string
	// Declared, if set, says which files (relative to ConfigDir) declare
	// key now, as the watcher's index knows it: a name declared by a file
	// other than <kind dir>/<name>.yaml exists all the same, and is edited
	// there. Without it only <name>.yaml and <name>.yml are looked at.
	Declared func(key events.Key) (files []string, ok bool)
	// beforeWrite, in tests, runs between the read an update or delete is
	// based on and its write.
	beforeWrite func(path string)
}

// Files is the filesystem mode's store: one file per definition,
// <config-dir>/mcpservers/<name>.yaml and workflows/<name>.yaml, in
// muster's layout.
type Files struct {
	opts FilesOptions
	// mu serialises this store's writes, so that two of its own calls
	// cannot interleave a read and a write; edits by others are caught by
	// the version check.
	mu sync.Mutex
}

var _ Store = (*Files)(nil)

// NewFiles returns the store of opts.ConfigDir.
func NewFiles(opts FilesOptions) (*Files, error) {
	if opts.ConfigDir == "" {
		return nil, errors.New("declare: FilesOptions.ConfigDir is required")
	}
	return &Files{opts: opts}, nil
}

// Mode is ModeFilesystem.
func (s *Files) Mode() string { return ModeFilesystem }

// path returns the file that declares key (relative to the config
// directory) and whether it exists.
func (s *Files) path(key events.Key) (string, bool, error) {
	if key.Namespace != events.DefaultNamespace {
		return "", false, &InvalidError{Key: key, Errs: v1alpha1.FieldErrors{{Field: "metadata.namespace", Msg: fmt.Sprintf("filesystem mode declares resources in namespace %q only, not %q", events.DefaultNamespace, key.Namespace)}}}
	}
	dir, _ := Dir(key.Kind)
	if s.opts.Declared != nil {
		if files, ok := s.opts.Declared(key); ok && len(files) > 0 {
			if len(files) > 1 {
				return "", false, fmt.Errorf("%s %s is declared by %d files (%v); musterd will not pick one: resolve it by hand", KindWord(key.Kind), key.Name, len(files), files)
			}
			return filepath.ToSlash(files[0]), true, nil
		}
	}
	for _, ext := range []string{".yaml", ".yml"} {
		rel := dir + "/" + key.Name + ext
		if _, err := os.Lstat(filepath.Join(s.opts.ConfigDir, rel)); err == nil {
			return rel, true, nil
		}
	}
	return dir + "/" + key.Name + ".yaml", false, nil
}

// read returns the file's content; nil and no error when it is gone.
func (s *Files) read(rel string) ([]byte, error) {
	f, err := os.Open(filepath.Join(s.opts.ConfigDir, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, v1alpha1.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Get reads key's definition from its file.
func (s *Files) Get(_ context.Context, key events.Key) (Definition, error) {
	key = key.Canonical()
	if err := checkKey(key); err != nil {
		return Definition{}, err
	}
	rel, data, err := s.readExisting(key)
	if err != nil {
		return Definition{}, err
	}
	return decode(key, data, rel)
}

// readExisting finds and reads key's file: a *NotFoundError if there is
// none, or it went between the look and the read.
func (s *Files) readExisting(key events.Key) (rel string, data []byte, err error) {
	rel, exists, err := s.path(key)
	if err != nil {
		return "", nil, err
	}
	if !exists {
		return "", nil, &NotFoundError{Key: key}
	}
	if data, err = s.read(rel); err != nil {
		return "", nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if data == nil {
		return "", nil, &NotFoundError{Key: key}
	}
	return rel, data, nil
}

// Create writes key's file; it fails if key is declared anywhere.
func (s *Files) Create(_ context.Context, key events.Key, spec map[string]any, meta ...Meta) (Definition, error) {
	key = key.Canonical()
	def, data, err := Validate(key, spec, metaExtra(meta))
	if err != nil {
		return Definition{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rel, exists, err := s.path(key)
	if err != nil {
		return Definition{}, err
	}
	if exists {
		return Definition{}, &ExistsError{Key: key, Where: rel}
	}
	if err := s.write(key, rel, data, ""); err != nil {
		var conflict *ConflictError
		if errors.As(err, &conflict) {
			return Definition{}, &ExistsError{Key: key, Where: rel}
		}
		return Definition{}, err
	}
	def.Where, def.Version = rel, version(data)
	return def, nil
}

// Update merges patch into key's spec and writes the file, unless the
// file is not the version read.
func (s *Files) Update(_ context.Context, key events.Key, patch map[string]any, expected string) (Definition, error) {
	key = key.Canonical()
	if err := checkKey(key); err != nil {
		return Definition{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rel, old, err := s.readExisting(key)
	if err != nil {
		return Definition{}, err
	}
	if expected != "" && expected != version(old) {
		return Definition{}, &ConflictError{Key: key, Where: rel, Expected: expected, Found: version(old)}
	}
	cur, err := decode(key, old, rel)
	var invalid *InvalidError
	switch {
	case errors.As(err, &invalid) && oneDocument(old):
		// The file on disk declares this one resource but does not
		// validate: the update may repair it, from the spec the file holds
		// as far as it reads.
		cur = Definition{Spec: rawSpec(old), Extra: extraOf(old)}
	case errors.As(err, &invalid):
		return Definition{}, &UneditableError{Key: key, Where: rel, Why: "does not parse as one document"}
	case err != nil:
		return Definition{}, err
	}
	def, data, err := Validate(key, merge(cur.Spec, patch), cur.Extra)
	if err != nil {
		return Definition{}, err
	}
	if err := s.write(key, rel, data, version(old)); err != nil {
		return Definition{}, err
	}
	def.Where, def.Version = rel, version(data)
	return def, nil
}

// Delete removes key's file, unless it is not the version read.
func (s *Files) Delete(_ context.Context, key events.Key, expected string) error {
	key = key.Canonical()
	if err := checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rel, old, err := s.readExisting(key)
	if err != nil {
		return err
	}
	if expected != "" && expected != version(old) {
		return &ConflictError{Key: key, Where: rel, Expected: expected, Found: version(old)}
	}
	// Removing the file removes all it declares: only a file of this one
	// resource (valid or not) goes.
	var invalid *InvalidError
	if _, err := decode(key, old, rel); err != nil && !(errors.As(err, &invalid) && oneDocument(old)) {
		if errors.As(err, &invalid) {
			return &UneditableError{Key: key, Where: rel, Why: "does not parse as one document"}
		}
		return err
	}
	if s.opts.beforeWrite != nil {
		s.opts.beforeWrite(rel)
	}
	abs := filepath.Join(s.opts.ConfigDir, rel)
	now, err := s.read(rel)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if now == nil || version(now) != version(old) {
		return &ConflictError{Key: key, Where: rel, Expected: version(old), Found: versionOrNone(now)}
	}
	if err := os.Remove(abs); err != nil {
		return fmt.Errorf("delete %s: %w", rel, err)
	}
	return syncDir(filepath.Dir(abs))
}

// write replaces rel with data atomically, if rel still holds the version
// expected ("" for a file that must not exist). The last look and the
// rename are not one atomic step: an edit landing between them, within
// microseconds, is not seen. Every edit before the last look is.
func (s *Files) write(key events.Key, rel string, data []byte, expected string) error {
	abs := filepath.Join(s.opts.ConfigDir, rel)
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(rel), err)
	}
	// Hidden, so the watcher never reads it.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(abs)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if s.opts.beforeWrite != nil {
		s.opts.beforeWrite(rel)
	}
	now, err := s.read(rel)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	switch {
	case expected == "" && now != nil:
		return &ConflictError{Key: key, Where: rel, Expected: "none", Found: version(now)}
	case expected != "" && versionOrNone(now) != expected:
		return &ConflictError{Key: key, Where: rel, Expected: expected, Found: versionOrNone(now)}
	}
	if expected == "" {
		// A create: link fails if the name appeared meanwhile, where
		// rename would replace it.
		if err := os.Link(tmp.Name(), abs); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return &ConflictError{Key: key, Where: rel, Expected: "none", Found: "a file created meanwhile"}
			}
			return fmt.Errorf("write %s: %w", rel, err)
		}
		os.Remove(tmp.Name())
	} else if err := os.Rename(tmp.Name(), abs); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	done = true
	return syncDir(dir)
}

// oneDocument reports whether data is one YAML document declaring one
// resource (of whatever validity): an update may rewrite it whole.
func oneDocument(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return n == 1
		}
		if err != nil {
			return false
		}
		if len(doc.Content) > 0 && !(doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			n++
		}
	}
}

func versionOrNone(data []byte) string {
	if data == nil {
		return ""
	}
	return version(data)
}

// extraOf is data's metadata, for an update that repairs a broken file.
func extraOf(data []byte) map[string]any {
	var raw map[string]any
	if yamlUnmarshal(data, &raw) != nil {
		return nil
	}
	return map[string]any{"metadata": raw["metadata"]}
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
