package client

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The paths musterd serves for the logins, muster's.
const (
	// StartPath is where a login's URL points: it sends the browser on
	// to the provider.
	StartPath = "/oauth/proxy/start"
	// DefaultCallbackPath is where the provider sends the browser back.
	DefaultCallbackPath = "/oauth/proxy/callback"
	// DefaultCIMDPath is where musterd's client metadata document is
	// served, the client_id it logs in as when nothing else is known.
	DefaultCIMDPath = "/.well-known/oauth-client.json"
)

// Options configure a Client.
type Options struct {
	// PublicURL is musterd's base URL as the user's browser reaches it
	// (muster's aggregator.oauth.mcpClient.publicUrl). Required. A path
	// in it is a reverse proxy's prefix: Handler serves its paths
	// without it.
	PublicURL string
	// CallbackPath is the path of the login's redirect URI, under
	// PublicURL. Default DefaultCallbackPath.
	CallbackPath string
	// CIMDPath is where Handler serves musterd's client metadata document
	// (when ClientID is empty). Default DefaultCIMDPath.
	CIMDPath string
	// HTTPClient makes every outbound request: discovery, registration,
	// code exchange and refresh. It carries the CAs of -extra-ca-file.
	// Default: a client on a clone of http.DefaultTransport with a 30 s
	// timeout. The providers' metadata is read through the go-sdk's
	// oauthex, which refuses a plain-http issuer that is not loopback,
	// and, when the transport does not dial itself, private addresses.
	HTTPClient *http.Client
	// ClientID and ClientSecret are a client registered beforehand at
	// every provider (muster's mcpClient.clientId). Default "": per
	// issuer, musterd's client metadata document URL when the provider
	// supports such documents, else dynamic client registration (RFC
	// 7591) when it offers it, cached per issuer, else the document URL
	// anyway, as muster does.
	ClientID     string
	ClientSecret string
	// ClientName is the name registrations and the metadata document
	// give. Default "musterd".
	ClientName string
	// Store keeps the tokens and the pending logins. Default a new
	// MemoryStore.
	Store Store
	// Logger gets the flows' log lines, never a token, code or verifier.
	// Default: slog.Default().
	Logger *slog.Logger
	// OnLogin is called after a callback stored a token, before the
	// browser is answered, so that whatever the wiring does with the news
	// is done when the user goes on. (musterd's connects the user at their
	// next core_auth_login, as muster does.) Default: nothing.
	OnLogin func(Login)
	// OnIssuerChange is called when a server's discovered authorization
	// server is not the one it named before (SEP-2352): the tokens its
	// users hold for old no longer serve it, and the wiring ends their
	// connections to it (musterd's: their next core_auth_login logs them
	// in at the new one). Default: nothing. The client itself drops its
	// dynamic registration at old when no server names old any more.
	OnIssuerChange func(server, old, new string)
	// StateTTL is how long a login may take from Begin to the callback.
	// Default 10 minutes.
	StateTTL time.Duration
	// MetadataTTL is how long an issuer's metadata is cached. Default 10
	// minutes.
	MetadataTTL time.Duration
	// EarlyExpiry is how long before its expiry a token is refreshed
	// rather than sent. Default 30 s.
	EarlyExpiry time.Duration
	// Now is the clock of states and expiries. Default time.Now.
	Now func() time.Time
}

// Login is a finished login, as OnLogin is told of it.
type Login struct {
	// Owner is whose token it is (identity.Identity.Owner).
	Owner string
	// Issuer is the provider that issued it.
	Issuer string
	// Server is the server whose challenge the login answered; the token
	// serves every server of Issuer.
	Server string
}

// Server is a protected server to log in to, as musterd knows it.
type Server struct {
	// Name is the MCPServer's name, for messages and the success page.
	Name string
	// URL is its MCP endpoint; also the RFC 8707 resource asked for.
	URL string
	// ResourceMetadata and Scope come from its 401 challenge
	// (supervisor.AuthRequiredError); "" for none.
	ResourceMetadata string
	Scope            string
	// Issuer pins its authorization server
	// (spec.auth.authorizationServer.issuer); "" to discover it.
	Issuer string
	// Scopes are the scopes to ask for; when empty, those of Scope, else
	// those its PRM supports.
	Scopes []string
}

// Client is musterd as OAuth client of protected MCP servers: it finds a
// server's provider, runs a user's login there through /oauth/proxy, and
// keeps and refreshes the user's token per issuer.
type Client struct {
	opts      Options
	http      *http.Client
	store     Store
	log       *slog.Logger
	now       func() time.Time
	public    *url.URL
	cimdURL   string
	redirect  string
	handler   http.Handler
	mu        sync.Mutex                // guards the maps below
	regMu     sync.Mutex                // registrations take turns
	metas     map[string]discovered     // issuer -> metadata
	regs      map[string]*registration  // issuer -> the client musterd is there
	issuers   map[string]string         // server name -> the issuer last discovered
	refreshMu map[[2]string]*sync.Mutex // (owner, issuer) -> one refresh at a time
}

// New returns a Client of opts, or an error naming the option that is
// wrong.
func New(opts Options) (*Client, error) {
	if opts.PublicURL == "" {
		return nil, errors.New("oauth client: PublicURL is required: the provider sends the browser back there")
	}
	public, err := url.Parse(strings.TrimSuffix(opts.PublicURL, "/"))
	if err != nil || (public.Scheme != "http" && public.Scheme != "https") || public.Host == "" {
		return nil, fmt.Errorf("oauth client: PublicURL %q is no absolute http(s) URL", opts.PublicURL)
	}
	if opts.CallbackPath == "" {
		opts.CallbackPath = DefaultCallbackPath
	}
	if opts.CIMDPath == "" {
		opts.CIMDPath = DefaultCIMDPath
	}
	for name, p := range map[string]string{"CallbackPath": opts.CallbackPath, "CIMDPath": opts.CIMDPath} {
		if !strings.HasPrefix(p, "/") || p == StartPath {
			return nil, fmt.Errorf("oauth client: %s %q must be an absolute path other than %s", name, p, StartPath)
		}
	}
	if opts.ClientSecret != "" && opts.ClientID == "" {
		return nil, errors.New("oauth client: ClientSecret without ClientID")
	}
	if opts.ClientName == "" {
		opts.ClientName = "musterd"
	}
	if opts.Store == nil {
		opts.Store = NewMemoryStore()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StateTTL <= 0 {
		opts.StateTTL = 10 * time.Minute
	}
	if opts.MetadataTTL <= 0 {
		opts.MetadataTTL = 10 * time.Minute
	}
	if opts.EarlyExpiry <= 0 {
		opts.EarlyExpiry = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second}
	}
	base := public.String()
	c := &Client{
		opts:      opts,
		http:      hc,
		store:     opts.Store,
		log:       opts.Logger.With("component", "oauth-client"),
		now:       opts.Now,
		public:    public,
		cimdURL:   base + opts.CIMDPath,
		redirect:  base + opts.CallbackPath,
		metas:     map[string]discovered{},
		regs:      map[string]*registration{},
		issuers:   map[string]string{},
		refreshMu: map[[2]string]*sync.Mutex{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StartPath, c.serveStart)
	mux.HandleFunc("GET "+opts.CallbackPath, c.serveCallback)
	mux.HandleFunc("GET "+opts.CIMDPath, c.serveCIMD)
	c.handler = mux
	return c, nil
}

// Handler serves StartPath, the callback path and the client metadata
// document; the wiring mounts it beside /mcp, unauthenticated (the
// state authenticates a callback).
func (c *Client) Handler() http.Handler { return c.handler }

// RedirectURI is the login's redirect URI: PublicURL and CallbackPath.
func (c *Client) RedirectURI() string { return c.redirect }

// Paths are the paths Handler serves, for the wiring's mux and its
// guard's allow-list.
func (c *Client) Paths() []string {
	return []string{StartPath, c.opts.CallbackPath, c.opts.CIMDPath}
}

// supportsS256 reports whether meta advertises PKCE with S256, which
// OAuth 2.1 and the MCP authorization spec require of a login.
func supportsS256(meta *oauthex.AuthServerMeta) bool {
	for _, m := range meta.CodeChallengeMethodsSupported {
		if m == "S256" {
			return true
		}
	}
	return false
}
