// Package archtest holds the import-graph test of ShopMind's layering (README.md,
// Architecture): dependencies point one way, from the composition roots down to the
// services and the gateway, and from those down to internal/ and gen/.
//
//   - The composition roots import anything: cmd/... (the binary), internal/app (wiring
//     targets), services (the list of services) and internal/testutil/stack (tests that run
//     the whole platform).
//   - A service (services/<name>/...) imports internal/ and gen/ and its own packages, never
//     another service, the gateway or a root; it links neither the gateway nor Coraza.
//   - The gateway (gateway/...) imports internal/ and gen/, never a service or a root.
//   - internal/ imports internal/ and gen/ only; gen/ imports gen/ only.
//
// The rules hold for the code built into the binary. Tests may assemble more (the roots, or
// the chat service's stream description in the gateway's tests), except that a service's
// tests never import another service: they reach it over gRPC, through the stack.
//
// The package has no non-test code; `make imports` runs it (part of `make check`).
package archtest
