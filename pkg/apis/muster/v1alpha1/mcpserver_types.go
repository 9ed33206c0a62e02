package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MCPServerType is how musterd reaches an MCP server.
// +kubebuilder:validation:Enum=stdio;streamable-http;sse
type MCPServerType string

const (
	// MCPServerTypeStdio runs the server as a local process speaking MCP on
	// its standard input and output.
	MCPServerTypeStdio MCPServerType = "stdio"
	// MCPServerTypeStreamableHTTP connects to a remote server over MCP's
	// streamable HTTP transport.
	MCPServerTypeStreamableHTTP MCPServerType = "streamable-http"
	// MCPServerTypeSSE connects to a remote server over Server-Sent Events.
	MCPServerTypeSSE MCPServerType = "sse"
)

// IsRemote reports whether t is reached over the network (it needs a URL
// rather than a command).
func (t MCPServerType) IsRemote() bool {
	return t == MCPServerTypeStreamableHTTP || t == MCPServerTypeSSE
}

// MCPServerState is the observed state of an MCP server's infrastructure,
// independent of any user's session.
// +kubebuilder:validation:Enum=Running;Starting;Stopped;Connected;"Auth Required";Connecting;Disconnected;Failed
type MCPServerState string

// States of stdio servers (a local process).
const (
	MCPServerStateStarting MCPServerState = "Starting"
	MCPServerStateRunning  MCPServerState = "Running"
	MCPServerStateStopped  MCPServerState = "Stopped"
)

// States of remote servers (streamable-http, sse).
const (
	MCPServerStateConnecting   MCPServerState = "Connecting"
	MCPServerStateConnected    MCPServerState = "Connected"
	MCPServerStateAuthRequired MCPServerState = "Auth Required"
	MCPServerStateDisconnected MCPServerState = "Disconnected"
)

// MCPServerStateFailed is the state of a server of any type that failed.
const MCPServerStateFailed MCPServerState = "Failed"

// Transient reports whether s is on the way up (Starting, Connecting):
// neither running nor down, so a call waits for it rather than failing.
func (s MCPServerState) Transient() bool {
	return s == MCPServerStateStarting || s == MCPServerStateConnecting
}

// AuthType is how musterd authenticates to a remote MCP server.
// +kubebuilder:validation:Enum=oauth;none
type AuthType string

const (
	AuthTypeOAuth AuthType = "oauth"
	AuthTypeNone  AuthType = "none"
)

// Defaults the CRD declares for MCPServer; Default applies the same ones.
const (
	DefaultMCPServerTimeout    = 30 // seconds
	DefaultTokenExchangeScopes = "openid profile email groups"
	DefaultClientIDKey         = "client-id"
	DefaultClientSecretKey     = "client-secret"
)

// ConditionReady is the condition type musterd sets on both kinds: True when
// the resource is reconciled and usable.
const ConditionReady = "Ready"

// MCPServer declares an MCP server that musterd runs (stdio) or connects to
// (streamable-http, sse).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcps
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.toolCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`,priority=1
// +kubebuilder:printcolumn:name="AutoStart",type=boolean,JSONPath=`.spec.autoStart`,priority=1
// +kubebuilder:validation:XValidation:rule="self.spec.type != 'stdio' || has(self.spec.command)",message="command is required when type is stdio"
// +kubebuilder:validation:XValidation:rule="self.spec.type == 'stdio' || has(self.spec.url)",message="url is required when type is streamable-http or sse"
// +kubebuilder:validation:XValidation:rule="self.spec.type == 'stdio' || !has(self.spec.args)",message="args field is only allowed when type is stdio"
// +kubebuilder:validation:XValidation:rule="self.spec.type != 'stdio' || !has(self.spec.headers)",message="headers field is only allowed when type is streamable-http or sse"
type MCPServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MCPServerSpec `json:"spec,omitempty"`
	// (Not the field's documentation, which the CRD shows: Status is nil
	// until a status is written. A definition from a file never has one,
	// musterd keeping statuses apart, and an empty status in each of the
	// index's definitions would be a large share of their memory. The CRD's
	// schema is the same either way.)

	Status *MCPServerStatus `json:"status,omitempty"`
}

// MCPServerSpec is the desired state of an MCP server.
type MCPServerSpec struct {
	// Type is how the server is run or reached.
	Type MCPServerType `json:"type"`

	// ToolPrefix replaces the server's name in the names of its tools, to
	// keep tools of different servers apart.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_-]*$`
	// +optional
	ToolPrefix string `json:"toolPrefix,omitempty"`

	// Description says what the server is for.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`

	// AutoStart starts the server when musterd starts, or when its
	// dependencies become available.
	// +kubebuilder:default=false
	// +optional
	AutoStart bool `json:"autoStart,omitempty"`

	// Command is the executable of a stdio server. Required for stdio.
	// +optional
	Command string `json:"command,omitempty"`

	// Args are the command line arguments of a stdio server. Only for stdio.
	// +optional
	Args []string `json:"args,omitempty"`

	// URL is the endpoint of a remote server. Required for streamable-http
	// and sse.
	// +kubebuilder:validation:Pattern=`^https?://[^\s/$.?#].[^\s]*$`
	// +optional
	URL string `json:"url,omitempty"`

	// Env is the environment of a stdio server's process; remote servers may
	// use it for configuration.
	// +optional
	Env map[string]string `json:"env,omitempty"`

	// Headers are sent with every request to a remote server. Only for
	// streamable-http and sse.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`

	// Timeout is the connection timeout of remote operations, in seconds.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	Timeout int `json:"timeout,omitempty"`

	// Auth configures authentication to a remote server.
	// +optional
	Auth *MCPServerAuth `json:"auth,omitempty"`

	// Family declares the server one instance of a family of equivalent
	// servers, whose tools are exposed once under the family's name with a
	// required argument that picks the instance.
	// +optional
	Family *MCPServerFamily `json:"family,omitempty"`
}

// MCPServerAuth configures how musterd authenticates to a remote server.
//
// +kubebuilder:validation:XValidation:rule="!has(self.authorizationServer) || self.type == 'oauth'",message="authorizationServer is only valid when type is oauth"
// +kubebuilder:validation:XValidation:rule="!(has(self.forwardToken) && self.forwardToken == true && has(self.authorizationServer))",message="forwardToken bypasses per-backend OAuth; set one or the other, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.tokenExchange) && has(self.tokenExchange.enabled) && self.tokenExchange.enabled == true && has(self.authorizationServer))",message="tokenExchange has its own issuer/endpoint config; set one or the other, not both"
type MCPServerAuth struct {
	// Type is the authentication method.
	// +kubebuilder:default=none
	// +optional
	Type AuthType `json:"type,omitempty"`

	// ForwardToken forwards the session's ID token, issued by the identity
	// provider, to the server unchanged instead of running a separate OAuth
	// flow.
	// +kubebuilder:default=false
	// +optional
	ForwardToken bool `json:"forwardToken,omitempty"`

	// RequiredAudiences are extra audiences the forwarded ID token must
	// carry; musterd requests them from the identity provider at login.
	// +optional
	RequiredAudiences []string `json:"requiredAudiences,omitempty"`

	// TokenExchange exchanges the local token for one issued by the remote
	// cluster's identity provider (RFC 8693). It takes precedence over
	// ForwardToken.
	// +optional
	TokenExchange *TokenExchangeConfig `json:"tokenExchange,omitempty"`

	// AuthorizationServer names the OAuth authorization server directly,
	// for servers that publish no RFC 9728 protected resource metadata.
	// Only with type oauth; excludes ForwardToken and TokenExchange.
	// +optional
	AuthorizationServer *AuthorizationServerConfig `json:"authorizationServer,omitempty"`
}

// TokenExchangeConfig configures RFC 8693 token exchange with a remote
// cluster's identity provider.
type TokenExchangeConfig struct {
	// Enabled turns token exchange on.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// DexTokenEndpoint is the remote identity provider's token endpoint
	// (possibly through a proxy). Required when Enabled.
	// +kubebuilder:validation:Pattern=`^https://[^\s/$.?#].[^\s]*$`
	// +optional
	DexTokenEndpoint string `json:"dexTokenEndpoint,omitempty"`

	// ExpectedIssuer is the "iss" claim of the exchanged token; derived from
	// DexTokenEndpoint when empty.
	// +kubebuilder:validation:Pattern=`^https://[^\s/$.?#].[^\s]*$`
	// +optional
	ExpectedIssuer string `json:"expectedIssuer,omitempty"`

	// ConnectorID is the remote identity provider's connector that trusts
	// the local one. Required when Enabled.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_-]*$`
	// +optional
	ConnectorID string `json:"connectorId,omitempty"`

	// Scopes are requested for the exchanged token, space-separated.
	// +kubebuilder:default="openid profile email groups"
	// +optional
	Scopes string `json:"scopes,omitempty"`

	// ClientCredentialsSecretRef names the Secret holding the client
	// credentials for the remote token endpoint.
	// +optional
	ClientCredentialsSecretRef *ClientCredentialsSecretRef `json:"clientCredentialsSecretRef,omitempty"`
}

// ClientCredentialsSecretRef names a Kubernetes Secret with OAuth client
// credentials.
type ClientCredentialsSecretRef struct {
	// Name is the Secret's name.
	Name string `json:"name"`

	// Namespace is the Secret's namespace; the MCPServer's when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// ClientIDKey is the Secret key holding the client ID.
	// +kubebuilder:default=client-id
	// +optional
	ClientIDKey string `json:"clientIdKey,omitempty"`

	// ClientSecretKey is the Secret key holding the client secret.
	// +kubebuilder:default=client-secret
	// +optional
	ClientSecretKey string `json:"clientSecretKey,omitempty"`
}

// AuthorizationServerConfig names an OAuth authorization server.
type AuthorizationServerConfig struct {
	// Issuer is the OAuth 2.0 / OIDC issuer URL, discovered through RFC 8414
	// or OIDC discovery.
	// +kubebuilder:validation:Pattern=`^https://[^/?#]+(/[^?#]*[^/?#])?$`
	Issuer string `json:"issuer"`

	// Scopes is the OAuth scope parameter, space-separated.
	// +optional
	Scopes string `json:"scopes,omitempty"`
}

// MCPServerFamily makes a server one instance of a family of equivalent
// servers.
type MCPServerFamily struct {
	// Name identifies the family; its members' tools are exposed under it.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_-]*$`
	Name string `json:"name"`

	// InstanceArg is the required tool argument that selects the member
	// handling a call. All members must agree on it.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_]*$`
	InstanceArg string `json:"instanceArg"`
}

// MCPServerStatus is the observed state of an MCP server's infrastructure.
// Per-user session state is not kept here.
type MCPServerStatus struct {
	// State is the high-level infrastructure state.
	// +optional
	State MCPServerState `json:"state,omitempty"`

	// LastError is why the server is not up now: set while it is Failed
	// or Disconnected, empty while it is Running or Connected.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// LastFailure is the server's last failure, kept after it recovered,
	// with LastFailureTime. A musterd addition, not in muster's CRD.
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`

	// LastFailureTime is when LastFailure happened. A musterd addition,
	// not in muster's CRD.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`

	// LastConnected is when the server last answered: its last successful
	// initialize, health ping or tool call.
	// +optional
	LastConnected *metav1.Time `json:"lastConnected,omitempty"`

	// RestartCount counts restarts of a stdio server's process that was
	// running; failed starts and remote reconnects are
	// ConsecutiveFailures.
	// +optional
	RestartCount int `json:"restartCount,omitempty"`

	// ConsecutiveFailures counts connection failures since the last
	// success; it drives the retry backoff.
	// +optional
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`

	// LastAttempt is when the last connection attempt was made.
	// +optional
	LastAttempt *metav1.Time `json:"lastAttempt,omitempty"`

	// NextRetryAfter is the earliest time of the next retry.
	// +optional
	NextRetryAfter *metav1.Time `json:"nextRetryAfter,omitempty"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the latest observations; see ConditionReady.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Tools are the exposed names of the tools the server offers while it
	// runs, sorted: {global prefix}_{toolPrefix or server name}_{tool}.
	// A musterd addition, not in muster's CRD.
	// +optional
	Tools []string `json:"tools,omitempty"`

	// ToolCount is the number of Tools. A musterd addition, not in muster's
	// CRD.
	// +optional
	ToolCount int `json:"toolCount,omitempty"`

	// ProtocolVersion is the MCP protocol version musterd and the server
	// agreed to while it runs: 2026-07-28 for a server of the newest
	// generation, an older one (2025-11-25 at most) for a server that does
	// not speak it, and for every SSE server. A musterd addition, not in
	// muster's CRD.
	// +optional
	ProtocolVersion string `json:"protocolVersion,omitempty"`

	// Override is an operator's stop or start of the server (musterd stop
	// NAME, core_service_stop), which reconciliation honours until a start,
	// a change of the definition or its deletion. Kubernetes mode keeps it
	// here, so that it outlives musterd's restarts. A musterd addition, not
	// in muster's CRD.
	// +optional
	Override *MCPServerOverride `json:"override,omitempty"`

	// Warnings are what musterd ignored in the definition in force: fields
	// of its file that the schema does not have, as muster's loader ignores
	// them, each naming file:line and field ("mcpservers/a.yaml:9:
	// spec.replicas: unknown field, ignored"). A musterd addition, not in
	// muster's CRD.
	// +optional
	Warnings []string `json:"warnings,omitempty"`
}

// MCPServerOverride is an operator's stop or start of an MCP server.
type MCPServerOverride struct {
	// State is what the operator asked for.
	// +kubebuilder:validation:Enum=stopped;started
	State string `json:"state"`

	// Reason is the operator's, shown in the Ready condition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Hash is the content hash of the definition the override was made
	// for: a changed definition ends it.
	Hash string `json:"hash"`

	// Since is when the operator asked.
	Since metav1.Time `json:"since"`

	// CorrelationID is the request's.
	// +optional
	CorrelationID string `json:"correlationId,omitempty"`
}

// MCPServerList is a list of MCPServers.
//
// +kubebuilder:object:root=true
type MCPServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MCPServer `json:"items"`
}
