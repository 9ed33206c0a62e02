package workflowrun

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
)

// ExecutionsDir is where, under the state dir, executions are kept: one
// file <id>.json each.
const ExecutionsDir = "executions"

// ReasonInterrupted is the error of an execution that was in progress when
// musterd stopped, set when musterd next starts.
const ReasonInterrupted = "musterd stopped while the execution was in progress"

// store keeps executions: every summary in memory, the full records in
// files under dir (or in memory when dir is empty). Records are written
// atomically: a temporary file, fsync, rename, fsync of the directory,
// mode 0600.
type store struct {
	dir      string
	maxCount int
	maxAge   time.Duration
	log      *slog.Logger

	mu        sync.Mutex
	summaries map[string]types.ExecutionSummary
	full      map[string]*types.Execution // memory mode only
}

func openStore(stateDir string, maxCount int, maxAge time.Duration, log *slog.Logger) (*store, error) {
	s := &store{maxCount: maxCount, maxAge: maxAge, log: log,
		summaries: map[string]types.ExecutionSummary{}, full: map[string]*types.Execution{}}
	if stateDir == "" {
		return s, nil
	}
	s.dir = filepath.Join(stateDir, ExecutionsDir)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("workflowrun: executions dir: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("workflowrun: executions dir: %w", err)
	}
	for _, de := range entries {
		name := de.Name()
		path := filepath.Join(s.dir, name)
		if strings.HasPrefix(name, ".tmp-") {
			_ = os.Remove(path) // a write cut short by a crash
			continue
		}
		if !strings.HasSuffix(name, ".json") || de.IsDir() {
			continue
		}
		exec, err := readExecution(path)
		if err != nil {
			s.log.Warn("skipping an unreadable execution record", "file", name, "error", err)
			continue
		}
		if exec.Status == types.ExecutionInProgress {
			msg := ReasonInterrupted
			exec.Status, exec.Error = types.ExecutionFailed, &msg
			if err := s.write(exec); err != nil {
				return nil, err
			}
		}
		s.summaries[exec.ExecutionID] = summarize(exec)
	}
	s.prune(time.Now())
	return s, nil
}

func readExecution(path string) (*types.Execution, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var exec types.Execution
	if err := json.Unmarshal(data, &exec); err != nil {
		return nil, err
	}
	if exec.ExecutionID == "" || filepath.Base(path) != exec.ExecutionID+".json" {
		return nil, errors.New("the record's execution_id does not match its file name")
	}
	return &exec, nil
}

// start records a new execution in progress and returns it.
func (s *store) start(workflow string, input map[string]any) *types.Execution {
	exec := &types.Execution{ExecutionID: newID(), WorkflowName: workflow, Status: types.ExecutionInProgress,
		StartedAt: time.Now().UTC().Round(0), Input: input, Steps: []types.ExecutionStep{}}
	if exec.Input == nil {
		exec.Input = map[string]any{}
	}
	s.save(exec)
	return exec
}

// finish records exec's end, its payloads bounded, and applies retention.
func (s *store) finish(exec *types.Execution, maxBytes int) {
	bound(exec, maxBytes)
	s.save(exec)
	s.prune(time.Now())
}

// save keeps exec; a record that cannot be written is logged, and the run
// it describes is not failed for it.
func (s *store) save(exec *types.Execution) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summaries[exec.ExecutionID] = summarize(exec)
	if s.dir == "" {
		cp := *exec
		s.full[exec.ExecutionID] = &cp
		return
	}
	if err := s.write(exec); err != nil {
		s.log.Error("writing an execution record", "execution_id", exec.ExecutionID, "error", err)
	}
}

// write writes exec's file atomically.
func (s *store) write(exec *types.Execution) error {
	data, err := json.MarshalIndent(exec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, exec.ExecutionID+".json")); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// prune deletes the finished executions beyond maxCount, oldest first, and
// those started more than maxAge before now.
func (s *store) prune(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.sortedLocked()
	kept := 0
	for _, sum := range all {
		old := now.Sub(sum.StartedAt) > s.maxAge
		if sum.Status != types.ExecutionInProgress && (old || kept >= s.maxCount) {
			delete(s.summaries, sum.ExecutionID)
			delete(s.full, sum.ExecutionID)
			if s.dir != "" {
				if err := os.Remove(filepath.Join(s.dir, sum.ExecutionID+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
					s.log.Warn("deleting an old execution record", "execution_id", sum.ExecutionID, "error", err)
				}
			}
			continue
		}
		kept++
	}
}

// sortedLocked is every summary, newest first.
func (s *store) sortedLocked() []types.ExecutionSummary {
	out := make([]types.ExecutionSummary, 0, len(s.summaries))
	for _, sum := range s.summaries {
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b types.ExecutionSummary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ExecutionID, a.ExecutionID)
	})
	return out
}

// List answers a query, newest first. The query must be valid, its
// default limit filled in (CheckQuery).
func (s *store) List(q types.ExecutionQuery) types.ExecutionList {
	limit := *q.Limit
	s.mu.Lock()
	all := s.sortedLocked()
	s.mu.Unlock()
	matched := []types.ExecutionSummary{}
	for _, sum := range all {
		if (q.Workflow == "" || sum.WorkflowName == q.Workflow) && (q.Status == "" || sum.Status == q.Status) {
			matched = append(matched, sum)
		}
	}
	page := []types.ExecutionSummary{}
	if q.Offset < len(matched) {
		page = matched[q.Offset:min(len(matched), q.Offset+limit)]
	}
	return types.ExecutionList{Executions: page, Total: len(matched), Limit: limit, Offset: q.Offset,
		HasMore: q.Offset+len(page) < len(matched)}
}

// Get returns the execution id.
func (s *store) Get(id string) (*types.Execution, bool) {
	s.mu.Lock()
	_, known := s.summaries[id]
	full := s.full[id]
	s.mu.Unlock()
	if !known {
		return nil, false
	}
	if full != nil {
		cp := *full
		return &cp, true
	}
	exec, err := readExecution(filepath.Join(s.dir, id+".json"))
	if err != nil {
		s.log.Warn("reading an execution record", "execution_id", id, "error", err)
		return nil, false
	}
	return exec, true
}

func summarize(e *types.Execution) types.ExecutionSummary {
	return types.ExecutionSummary{ExecutionID: e.ExecutionID, WorkflowName: e.WorkflowName, Status: e.Status,
		StartedAt: e.StartedAt, CompletedAt: e.CompletedAt, DurationMs: e.DurationMs, StepCount: len(e.Steps), Error: e.Error}
}

// newID returns a random UUID (version 4), as muster's execution ids are.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
