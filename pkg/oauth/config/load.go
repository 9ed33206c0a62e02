package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Options are Load's.
type Options struct {
	// Path is where the section sits in its file, the start of every
	// error's key path. Default "aggregator.oauth".
	Path string
}

// DefaultPath is Options.Path's default.
const DefaultPath = "aggregator.oauth"

// Load reads the section from its YAML node (nil: the section is absent)
// onto Default: it decodes every key, reads each *File key's file, and
// checks the whole (Validate). A *File path is read as given, relative to
// the working directory, as muster reads it. The error names every key at
// fault, by its path.
func Load(n *yaml.Node, opts Options) (Config, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	cfg := Default()
	if n != nil {
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			n = n.Content[0]
		}
		if err := (decoder{}).decode(n, reflect.ValueOf(&cfg).Elem(), opts.Path); err != nil {
			return Config{}, err
		}
	}
	cfg.fillDefaults()
	if err := cfg.readSecretFiles(opts.Path); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(opts.Path); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// fillDefaults puts muster's default where a key was given empty, as
// muster falls back to it where the value is used.
func (c *Config) fillDefaults() {
	d := Default()
	for _, f := range []struct{ v, def *string }{
		{&c.MCPClient.CallbackPath, &d.MCPClient.CallbackPath},
		{&c.MCPClient.CIMD.Path, &d.MCPClient.CIMD.Path},
		{&c.MCPClient.CIMD.Scopes, &d.MCPClient.CIMD.Scopes},
		{&c.Server.Provider, &d.Server.Provider},
		{&c.Server.Storage.Type, &d.Server.Storage.Type},
		{&c.Server.Storage.Valkey.KeyPrefix, &d.Server.Storage.Valkey.KeyPrefix},
	} {
		if *f.v == "" {
			*f.v = *f.def
		}
	}
	for i, p := range c.Server.TrustedProxyCIDRs {
		c.Server.TrustedProxyCIDRs[i] = p.Masked()
	}
}

// readSecretFiles reads each secret its *File key names. A key and its
// File twin both set is an error: which one counts must not be a guess.
func (c *Config) readSecretFiles(prefix string) error {
	s := &c.Server
	var errs []error
	for _, f := range []struct {
		key    string
		secret *Secret
		file   string
	}{
		{"server.dex.clientSecret", &s.Dex.ClientSecret, s.Dex.ClientSecretFile},
		{"server.google.clientSecret", &s.Google.ClientSecret, s.Google.ClientSecretFile},
		{"server.registrationToken", &s.RegistrationToken, s.RegistrationTokenFile},
		{"server.encryptionKey", &s.EncryptionKey, s.EncryptionKeyFile},
		{"server.storage.valkey.password", &s.Storage.Valkey.Password, s.Storage.Valkey.PasswordFile},
	} {
		if f.file == "" {
			continue
		}
		key := prefix + "." + f.key
		if f.secret.IsSet() {
			errs = append(errs, fmt.Errorf("%s and %sFile are both set: give one", key, key))
			continue
		}
		data, err := os.ReadFile(f.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%sFile: %w", key, err))
			continue
		}
		// Mounted secrets often end in a newline.
		value := strings.TrimSpace(string(data))
		if value == "" {
			errs = append(errs, fmt.Errorf("%sFile: %s is empty", key, f.file))
			continue
		}
		*f.secret = NewSecret(value)
	}
	return errors.Join(errs...)
}
