package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/oauth/config"
)

// secretKeys are the secrets with a *File twin, and where each lands.
var secretKeys = []struct {
	key string
	get func(config.Config) config.Secret
}{
	{"server.dex.clientSecret", func(c config.Config) config.Secret { return c.Server.Dex.ClientSecret }},
	{"server.google.clientSecret", func(c config.Config) config.Secret { return c.Server.Google.ClientSecret }},
	{"server.registrationToken", func(c config.Config) config.Secret { return c.Server.RegistrationToken }},
	{"server.encryptionKey", func(c config.Config) config.Secret { return c.Server.EncryptionKey }},
	{"server.storage.valkey.password", func(c config.Config) config.Secret { return c.Server.Storage.Valkey.Password }},
}

// Each *File key's file is read at load, its surrounding whitespace (a
// mounted secret's newline) dropped; the file's path is kept.
func TestEachFileKeyIsReadAtLoad(t *testing.T) {
	for _, s := range secretKeys {
		t.Run(s.key, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "secret")
			require.NoError(t, os.WriteFile(file, []byte(key32+"\n"), 0o600))
			cfg, err := load(t, section(t, kv{s.key + "File", file}))
			require.NoError(t, err)
			assert.Equal(t, key32, s.get(cfg).Reveal())
		})
	}
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("tok"), 0o600))
	cfg, err := load(t, section(t, kv{"server.registrationTokenFile", file}))
	require.NoError(t, err)
	assert.Equal(t, file, cfg.Server.RegistrationTokenFile)
}

// A file that cannot be read, or is empty, is an error naming the key and
// the file; so is a key set beside its File twin.
func TestAFileKeyErrorNamesTheKeyAndTheFile(t *testing.T) {
	for _, s := range secretKeys {
		t.Run(s.key, func(t *testing.T) {
			dir := t.TempDir()
			missing := filepath.Join(dir, "missing")
			_, err := load(t, section(t, kv{s.key + "File", missing}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "aggregator.oauth."+s.key+"File: open "+missing+": no such file or directory")

			empty := filepath.Join(dir, "empty")
			require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
			_, err = load(t, section(t, kv{s.key + "File", empty}))
			assert.EqualError(t, err, "aggregator.oauth."+s.key+"File: "+empty+" is empty")

			_, err = load(t, section(t, kv{s.key, "x"}, kv{s.key + "File", empty}))
			assert.EqualError(t, err, "aggregator.oauth."+s.key+" and aggregator.oauth."+s.key+"File are both set: give one")
		})
	}
}

// A secret read from a file is checked as one given in place.
func TestASecretFromAFileIsChecked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte("AAAA\n"), 0o600))
	_, err := load(t, section(t, kv{"server.encryptionKeyFile", file}))
	assert.EqualError(t, err, "aggregator.oauth.server.encryptionKey: decodes to 3 bytes, not 32 (make one with: openssl rand -base64 32)")
}
