// Package version is the version of the ShopMind binary, which is also the version of the
// API contract it serves: the OpenAPI documents (info.version), the SDKs (sdk/typescript's
// package.json, sdk/python's pyproject.toml) and `shopmind version` all say it. The major
// number follows the REST paths' /api/v1: within 1.x only the changes `buf breaking`
// (WIRE_JSON) allows are made (README, Versioning).
package version

// Version is the semantic version of this build. A release build may set it with
// -ldflags "-X github.com/shopmind/shopmind/internal/version.Version=1.2.3"; the served
// OpenAPI documents then carry that version (the committed ones carry this default).
var Version = "1.0.0"
