// Package linked links every package of the contract into a binary or test, so that all of
// its descriptors are registered in protoregistry.GlobalFiles (for code that walks the whole
// contract: the WAF's exclusions from text_kind, the contract and bad-input tests, pbjson's
// comparison with protojson). Import it for its side effect: _ ".../internal/contract/linked".
package linked

import (
	_ "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/common/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	_ "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
)
