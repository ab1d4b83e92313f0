// Package contract holds the contract tests of the ShopMind API: they hold the generated
// code in gen/go and the merged OpenAPI file gen/openapi/shopmind.swagger.json to the spec
// documents and to the conventions of proto/README.md.
//
// The tests check that every endpoint the spec lists is routed (and that no route exists that
// is neither in the spec nor in the documented list of routes designed by us), that every RPC
// declares who may call it and carries an HTTP binding (internal services excepted), that
// request messages reuse the shared predefined protovalidate rules of
// shopmind/common/v1/common.proto, and that those shared rules accept and reject the values
// the spec says they do.
//
// The package has no non-test code; run it with `go test ./internal/contract/`.
package contract
