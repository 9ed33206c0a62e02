package authserver

import "testing"

// A metadata document is fetched from public addresses alone: none that
// reaches the host, its network, a cloud's metadata service or a private
// address through an IPv6 translation.
func TestOnlyPublicAddressesServeMetadataDocuments(t *testing.T) {
	for host, want := range map[string]bool{
		"93.184.215.14":         true,
		"2606:2800:21f:cb07::1": true,
		"127.0.0.1":             false,
		"10.1.2.3":              false,
		"172.16.0.1":            false,
		"192.168.1.1":           false,
		"169.254.169.254":       false, // link-local metadata service
		"100.100.100.200":       false, // carrier-grade NAT (a cloud's metadata service)
		"0.1.2.3":               false,
		"0.0.0.0":               false,
		"255.255.255.255":       false,
		"224.0.0.1":             false,
		"198.18.0.1":            false,
		"::1":                   false,
		"::":                    false,
		"fe80::1":               false,
		"fd00::1":               false,
		"64:ff9b::a01:203":      false, // NAT64 of 10.1.2.3
		"2002:a01:203::1":       false, // 6to4 of 10.1.2.3
		"::ffff:10.1.2.3":       false, // IPv4-mapped
		"not-an-address":        false,
	} {
		if got := publicAddress(host); got != want {
			t.Errorf("publicAddress(%q) = %v, want %v", host, got, want)
		}
	}
}
