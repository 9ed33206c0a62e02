package client

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
)

// Client talks to one musterd daemon. It is safe for concurrent use.
type Client struct {
	base  string // scheme://host[:port][/prefix], without a trailing slash
	token string
	http  *http.Client
}

// New returns a client of the API at baseURL ("http://127.0.0.1:8090"; a
// URL without a scheme gets http://). token, when not empty, is sent as a
// bearer token. A nil httpClient means http.DefaultClient; its Timeout, if
// any, also cuts event streams short.
func New(baseURL, token string, httpClient *http.Client) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server address %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server address %q: want http://host:port or https://host:port", baseURL)
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), token: token, http: httpClient}, nil
}

// Error is an answer other than 2xx.
type Error struct {
	// StatusCode is the HTTP status code.
	StatusCode int
	// Message is the server's error message, or the status line if it sent
	// none.
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// IsUnauthorized reports whether err is a 401 answer: the daemon has a
// token and the request did not carry it.
func IsUnauthorized(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusUnauthorized
}

// List returns the resources of kind (every kind if empty) in namespace
// (every namespace if empty), sorted by kind, namespace and name.
func (c *Client) List(ctx context.Context, kind, namespace string) ([]types.Object, error) {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", kind)
	}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	var list types.List
	if err := c.do(ctx, http.MethodGet, "/api/v1/resources", q, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Get returns one resource; an empty namespace is "default".
func (c *Client) Get(ctx context.Context, kind, namespace, name string) (types.Object, error) {
	var o types.Object
	err := c.do(ctx, http.MethodGet, resourcePath(kind, namespace, name), nil, &o)
	return o, err
}

// Recent returns a resource's latest events, oldest first, as the daemon
// kept them.
func (c *Client) Recent(ctx context.Context, kind, namespace, name string) ([]Event, error) {
	var list types.EventList
	if err := c.do(ctx, http.MethodGet, resourcePath(kind, namespace, name)+"/events", nil, &list); err != nil {
		return nil, err
	}
	out := make([]Event, len(list.Items))
	for i, data := range list.Items {
		ev, err := decode("", data)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// Reconcile triggers a reconcile of one resource and returns its key.
func (c *Client) Reconcile(ctx context.Context, kind, namespace, name string) (events.Key, error) {
	var resp types.ReconcileResponse
	err := c.do(ctx, http.MethodPost, resourcePath(kind, namespace, name)+"/reconcile", nil, &resp)
	return resp.Key, err
}

// Ready reports whether the daemon has finished its first full reconcile.
func (c *Client) Ready(ctx context.Context) (bool, error) {
	var r types.Readiness
	err := c.do(ctx, http.MethodGet, "/readyz", nil, &r)
	var e *Error
	if errors.As(err, &e) && e.StatusCode == http.StatusServiceUnavailable {
		return false, nil
	}
	return r.Ready, err
}

func resourcePath(kind, namespace, name string) string {
	if namespace == "" {
		namespace = events.DefaultNamespace
	}
	return "/api/v1/resources/" + url.PathEscape(kind) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

func (c *Client) request(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	target := c.base + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	return resp, nil
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, out any) error {
	resp, err := c.request(ctx, method, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// errorOf reads the server's {"error":…} message.
func errorOf(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var msg types.ErrorResponse
	if json.Unmarshal(body, &msg) != nil || msg.Error == "" {
		msg.Error = cmp.Or(strings.TrimSpace(string(body)), resp.Status)
	}
	return &Error{StatusCode: resp.StatusCode, Message: msg.Error}
}

// Event is one item of an event stream: an event, or a notice that the
// server dropped some.
type Event struct {
	// Type is the event's type name; empty in a drop notice.
	Type string
	// Event is the decoded event; nil in a drop notice and for a type this
	// program has not registered (see events.Register).
	Event events.Event
	// Data is the event as the server sent it: events.Marshal's envelope.
	Data json.RawMessage
	// Dropped, when positive, makes this a notice that the server dropped
	// that many events of this stream because it was read too slowly; state
	// may have changed unseen, so read it again.
	Dropped uint64
}

// EventStream is an open event stream. Next is not safe for concurrent
// use; Close may be called from any goroutine.
type EventStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	r      *bufio.Reader
}

// Events opens a stream of the events f selects. It returns once the
// server has subscribed; the stream ends when ctx is done, Close is called
// or the server goes.
func (c *Client) Events(ctx context.Context, f types.EventFilter) (*EventStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.request(ctx, http.MethodGet, "/api/v1/events", f.Query())
	if err != nil {
		cancel()
		return nil, err
	}
	return &EventStream{ctx: ctx, cancel: cancel, body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// Next returns the next event. Once the stream has ended it returns the
// context's error if ctx is done, io.EOF if the server ended the stream,
// or the read error.
func (s *EventStream) Next() (Event, error) {
	var typ string
	var data []byte
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if s.ctx.Err() != nil {
				return Event{}, s.ctx.Err()
			}
			return Event{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch field, value, _ := strings.Cut(line, ":"); {
		case line == "":
			if data == nil {
				continue // no data: no event, per the SSE spec
			}
			return decode(typ, data)
		case field == "":
			if n, ok := strings.CutPrefix(strings.TrimSpace(value), "dropped "); ok {
				if dropped, err := strconv.ParseUint(n, 10, 64); err == nil && dropped > 0 {
					return Event{Dropped: dropped}, nil
				}
			}
		case field == "event":
			typ = strings.TrimPrefix(value, " ")
		case field == "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(value, " ")...)
		}
	}
}

func decode(typ string, data []byte) (Event, error) {
	var envelope struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &envelope); err != nil {
		return Event{}, fmt.Errorf("event stream: %s event: %w", typ, err)
	}
	ev := Event{Type: cmp.Or(typ, envelope.Type), Data: data}
	if !slices.Contains(events.Types(), envelope.Type) {
		return ev, nil
	}
	e, err := events.Unmarshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("event stream: %w", err)
	}
	ev.Event = e
	return ev, nil
}

// Close ends the stream.
func (s *EventStream) Close() error {
	s.cancel()
	return s.body.Close()
}

// Service asks for action (start, stop or restart) on the MCP server name
// in namespace, with the operator's reason, and returns the outcome.
func (c *Client) Service(ctx context.Context, namespace, name, action, reason string) (controls.ServiceResult, error) {
	if namespace == "" {
		namespace = events.DefaultNamespace
	}
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	var res controls.ServiceResult
	err := c.do(ctx, http.MethodPost, "/api/v1/services/"+url.PathEscape(namespace)+"/"+url.PathEscape(name)+"/"+url.PathEscape(action), q, &res)
	return res, err
}

// SetKindEnabled enables or disables the reconciliation of kind.
func (c *Client) SetKindEnabled(ctx context.Context, kind string, enabled bool) (controls.KindOverview, error) {
	action := "disable"
	if enabled {
		action = "enable"
	}
	var res controls.KindOverview
	err := c.do(ctx, http.MethodPost, "/api/v1/kinds/"+url.PathEscape(kind)+"/"+action, nil, &res)
	return res, err
}

// Resync asks for a full reconcile of kind, or of every kind when kind is
// empty.
func (c *Client) Resync(ctx context.Context, kind string) (controls.ResyncResult, error) {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", kind)
	}
	var res controls.ResyncResult
	err := c.do(ctx, http.MethodPost, "/api/v1/resync", q, &res)
	return res, err
}

// Overview returns the daemon's overview.
func (c *Client) Overview(ctx context.Context) (controls.Overview, error) {
	var o controls.Overview
	err := c.do(ctx, http.MethodGet, "/api/v1/overview", nil, &o)
	return o, err
}

// Executions lists workflow executions, newest first.
func (c *Client) Executions(ctx context.Context, q types.ExecutionQuery) (types.ExecutionList, error) {
	v := url.Values{}
	for k, val := range map[string]string{"workflow": q.Workflow, "status": q.Status} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Limit != nil {
		v.Set("limit", strconv.Itoa(*q.Limit))
	}
	if q.Offset != 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	var list types.ExecutionList
	err := c.do(ctx, http.MethodGet, "/api/v1/executions", v, &list)
	return list, err
}

// Execution returns one workflow execution with its steps.
func (c *Client) Execution(ctx context.Context, id string) (types.Execution, error) {
	var exec types.Execution
	err := c.do(ctx, http.MethodGet, "/api/v1/executions/"+url.PathEscape(id), nil, &exec)
	return exec, err
}
