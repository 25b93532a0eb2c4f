// Package egress answers "what may a render reach, and with what": the
// allowlist rules (ALLOWED_HOSTS, CALLBACK_ALLOWED_HOSTS), the checked
// dialer that resolves a name once and dials only an allowed address, the
// forward proxy every request of Chromium goes through, the TLS
// interception of tunnels to origins with credentials, the binding of
// credentials to origins (Origins), and the guard that lets only the
// worker's own browsers use the proxy (PeerGuard).
//
// render starts one Proxy per Renderer and points Chromium at it; the
// callback deliverer dials through the same Dialer; spec checks URLs
// against a List through its HostList interface, so the contract does not
// depend on this network code.
package egress
