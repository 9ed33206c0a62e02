package declare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

var (
	gitKey  = events.NewKey(v1alpha1.KindMCPServer, "", "git")
	flowKey = events.NewKey(v1alpha1.KindWorkflow, "", "flow")
)

func gitSpec() map[string]any {
	return map[string]any{"type": "stdio", "command": "mcp-git", "autoStart": true, "env": map[string]any{"GIT_TOKEN": "s3cr3t-value"}}
}

func newFiles(t *testing.T) (*Files, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := NewFiles(FilesOptions{ConfigDir: dir})
	require.NoError(t, err)
	return s, dir
}

func TestCreateWritesMustersLayoutAtomically0600(t *testing.T) {
	s, dir := newFiles(t)
	def, err := s.Create(context.Background(), gitKey, gitSpec())
	require.NoError(t, err)
	assert.Equal(t, "mcpservers/git.yaml", def.Where)

	path := filepath.Join(dir, "mcpservers", "git.yaml")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
spec:
  autoStart: true
  command: mcp-git
  env:
    GIT_TOKEN: s3cr3t-value
  type: stdio
`, string(data), "the secret is written as asked")
	// What the watcher will read is what was validated: same hash.
	docs, err := v1alpha1.DecodeFile("mcpservers/git.yaml", data)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, docs[0].Hash, def.Hash)
	assert.Equal(t, version(data), def.Version)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

func TestCreateOfANameThatExistsFails(t *testing.T) {
	s, dir := newFiles(t)
	_, err := s.Create(context.Background(), gitKey, gitSpec())
	require.NoError(t, err)
	_, err = s.Create(context.Background(), gitKey, map[string]any{"type": "stdio", "command": "other"})
	var exists *ExistsError
	require.ErrorAs(t, err, &exists)
	assert.Equal(t, "MCP server 'git' already exists (mcpservers/git.yaml)", err.Error())
	data, _ := os.ReadFile(filepath.Join(dir, "mcpservers", "git.yaml"))
	assert.Contains(t, string(data), "mcp-git", "the existing file is untouched")

	// A name declared by another file, as the index knows it, exists too.
	s.opts.Declared = func(k events.Key) ([]string, bool) {
		if k == flowKey {
			return []string{"workflows/all.yaml"}, true
		}
		return nil, false
	}
	_, err = s.Create(context.Background(), flowKey, map[string]any{"steps": []any{map[string]any{"id": "a", "tool": "x"}}})
	require.ErrorAs(t, err, &exists)
	assert.Equal(t, "workflows/all.yaml", exists.Where)
}

func TestUpdateAndDeleteOfANameThatDoesNotExistFail(t *testing.T) {
	s, _ := newFiles(t)
	_, err := s.Update(context.Background(), gitKey, map[string]any{"command": "x"}, "")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "MCP server git not found", err.Error())
	err = s.Delete(context.Background(), flowKey, "")
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "workflow flow not found", err.Error())
	_, err = s.Get(context.Background(), flowKey)
	require.ErrorAs(t, err, &nf)
}

func TestValidationErrorsNameTheFieldAsTheDecoderDoesAndWriteNothing(t *testing.T) {
	cases := []struct {
		name string
		key  events.Key
		spec map[string]any
		want string
	}{
		{"unknown field", gitKey, map[string]any{"type": "stdio", "command": "x", "comand": "y"}, `spec.comand: unknown field (did you mean "command"?)`},
		{"bad type", gitKey, map[string]any{"type": "stdio", "command": "x", "timeout": "soon"}, "spec.timeout:"},
		{"missing required field", gitKey, map[string]any{"type": "stdio"}, "spec.command:"},
		{"bad enum", gitKey, map[string]any{"type": "carrier-pigeon", "command": "x"}, "spec.type:"},
		{"workflow without steps", flowKey, map[string]any{"description": "d"}, "spec.steps:"},
		{"bad name", events.NewKey(v1alpha1.KindMCPServer, "", "../etc"), gitSpec(), "metadata.name:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := newFiles(t)
			_, err := s.Create(context.Background(), tc.key, tc.spec)
			var invalid *InvalidError
			require.ErrorAs(t, err, &invalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), ".yaml", "no file or line of a document the caller never wrote")
			entries, _ := os.ReadDir(dir)
			assert.Empty(t, entries, "nothing is written")
		})
	}
}

func TestSecretsNeverAppearInErrors(t *testing.T) {
	spec := gitSpec()
	spec["env"] = map[string]any{"GIT_TOKEN": "s3cr3t-value", "N": 42.5}
	spec["headers"] = map[string]any{"Authorization": []any{"Bearer s3cr3t-header"}}
	_, _, err := Validate(gitKey, spec, nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cr3t")
}

func TestUpdateMergesFieldsAndKeepsTheRest(t *testing.T) {
	s, dir := newFiles(t)
	path := filepath.Join(dir, "mcpservers", "git.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: git\n  labels:\n    team: a\nspec:\n  type: stdio\n  command: mcp-git\n"), 0o644))
	def, err := s.Update(context.Background(), gitKey, map[string]any{"args": []any{"--verbose"}}, "")
	require.NoError(t, err)
	server := def.Object.(*v1alpha1.MCPServer)
	assert.Equal(t, "mcp-git", server.Spec.Command)
	assert.Equal(t, []string{"--verbose"}, server.Spec.Args)
	assert.Equal(t, map[string]string{"team": "a"}, server.Labels)
	info, _ := os.Stat(path)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// The Done-when item: a file edited on disk between a read and an update
// is reported as a conflict, and the edit survives.
func TestAnEditBetweenReadAndUpdateIsAConflictAndSurvives(t *testing.T) {
	edit := []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: git\nspec:\n  type: stdio\n  command: edited-by-hand # keep me\n")

	t.Run("the caller's read", func(t *testing.T) {
		s, dir := newFiles(t)
		_, err := s.Create(context.Background(), gitKey, gitSpec())
		require.NoError(t, err)
		read, err := s.Get(context.Background(), gitKey)
		require.NoError(t, err)
		path := filepath.Join(dir, "mcpservers", "git.yaml")
		require.NoError(t, os.WriteFile(path, edit, 0o600))

		_, err = s.Update(context.Background(), gitKey, map[string]any{"command": "mine"}, read.Version)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, read.Version, conflict.Expected)
		assert.Equal(t, version(edit), conflict.Found)
		got, _ := os.ReadFile(path)
		assert.Equal(t, string(edit), string(got), "the edit survives")

		err = s.Delete(context.Background(), gitKey, read.Version)
		require.ErrorAs(t, err, &conflict)
		got, _ = os.ReadFile(path)
		assert.Equal(t, string(edit), string(got), "the edit survives a delete too")
	})

	t.Run("the store's own read", func(t *testing.T) {
		s, dir := newFiles(t)
		_, err := s.Create(context.Background(), gitKey, gitSpec())
		require.NoError(t, err)
		path := filepath.Join(dir, "mcpservers", "git.yaml")
		s.opts.beforeWrite = func(string) { require.NoError(t, os.WriteFile(path, edit, 0o600)) }

		_, err = s.Update(context.Background(), gitKey, map[string]any{"command": "mine"}, "")
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.True(t, strings.HasPrefix(err.Error(), "conflict: MCP server git (mcpservers/git.yaml) was changed by someone else"), err.Error())
		got, _ := os.ReadFile(path)
		assert.Equal(t, string(edit), string(got), "the edit survives")

		edit2 := append(append([]byte(nil), edit...), "# and again\n"...)
		s.opts.beforeWrite = func(string) { require.NoError(t, os.WriteFile(path, edit2, 0o600)) }
		err = s.Delete(context.Background(), gitKey, "")
		require.ErrorAs(t, err, &conflict)
		got, _ = os.ReadFile(path)
		assert.Equal(t, string(edit2), string(got), "the edit survives a delete too")
		entries, _ := os.ReadDir(filepath.Dir(path))
		assert.Len(t, entries, 1, "no temporary file is left behind")
	})

	t.Run("a create racing another", func(t *testing.T) {
		s, dir := newFiles(t)
		path := filepath.Join(dir, "mcpservers", "git.yaml")
		s.opts.beforeWrite = func(string) { require.NoError(t, os.WriteFile(path, edit, 0o600)) }
		_, err := s.Create(context.Background(), gitKey, gitSpec())
		var exists *ExistsError
		require.ErrorAs(t, err, &exists)
		got, _ := os.ReadFile(path)
		assert.Equal(t, string(edit), string(got))
	})
}

func TestDeleteRemovesTheFile(t *testing.T) {
	s, dir := newFiles(t)
	def, err := s.Create(context.Background(), flowKey, map[string]any{"steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	require.NoError(t, err)
	require.NoError(t, s.Delete(context.Background(), flowKey, def.Version))
	_, err = os.Stat(filepath.Join(dir, "workflows", "flow.yaml"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestFilesystemModeKnowsOnlyTheDefaultNamespace(t *testing.T) {
	s, _ := newFiles(t)
	_, err := s.Create(context.Background(), events.NewKey(v1alpha1.KindMCPServer, "team-a", "git"), gitSpec())
	var invalid *InvalidError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, err.Error(), "metadata.namespace")
}

// A file that declares more than the one resource is never rewritten or
// removed: the others it declares would go with it.
func TestAFileOfSeveralResourcesIsLeftToItsOwner(t *testing.T) {
	s, dir := newFiles(t)
	both := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: git\nspec:\n  type: stdio\n  command: mcp-git\n" +
		"---\napiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: other\nspec:\n  type: stdio\n  command: mcp-other\n"
	path := filepath.Join(dir, "mcpservers", "all.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(both), 0o600))
	s.opts.Declared = func(k events.Key) ([]string, bool) { return []string{"mcpservers/all.yaml"}, true }

	_, err := s.Update(context.Background(), gitKey, map[string]any{"command": "x"}, "")
	var uneditable *UneditableError
	require.ErrorAs(t, err, &uneditable)
	assert.Equal(t, "MCP server git is declared in mcpservers/all.yaml, which holds 2 documents; musterd edits and deletes only a file declaring that one resource: change it by hand", err.Error())
	require.ErrorAs(t, s.Delete(context.Background(), gitKey, ""), &uneditable)
	got, _ := os.ReadFile(path)
	assert.Equal(t, both, string(got))
}

// A file of the one resource that no longer validates may be repaired by
// an update, and deleted.
func TestABrokenFileOfTheResourceCanBeRepaired(t *testing.T) {
	s, dir := newFiles(t)
	path := filepath.Join(dir, "mcpservers", "git.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: git\nspec:\n  type: stdio\n  command: mcp-git\n  timeout: soon\n"), 0o600))
	def, err := s.Update(context.Background(), gitKey, map[string]any{"timeout": 10.0}, "")
	require.NoError(t, err)
	assert.Equal(t, 10, def.Object.(*v1alpha1.MCPServer).Spec.Timeout)
	assert.Equal(t, "mcp-git", def.Object.(*v1alpha1.MCPServer).Spec.Command)
}
