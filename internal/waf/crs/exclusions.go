package crs

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The contract's descriptors, read at start (every service, whatever the process hosts).
	commonv1 "github.com/shopmind/shopmind/gen/go/shopmind/common/v1"
	_ "github.com/shopmind/shopmind/internal/contract/linked" // every descriptor of the contract
)

// wafExclusions are rule exclusions for legitimate ShopMind traffic, added after the rules
// and before the blocking evaluation (WAF.md, Exclusions). None is needed at paranoia level 1.
// From level 2 up, the level-2 to level-4 rules (which flag SQL and shell words, URLs and
// punctuation in any text) leave to the level-1 rules the arguments the contract marks with
// (shopmind.common.v1.text_kind): free text, which the backends store, parse or pass on as
// text and never splice into SQL, shell commands or HTML; field names checked against a
// whitelist (sort specs, field masks); and, as names only, the arguments beneath a field
// whose own name is an SQL word (current_user).
var wafExclusions = sync.OnceValue(func() []string {
	args := contractLevel1Only()
	var targets []string
	for _, name := range args.values {
		targets = append(targets, "!ARGS:"+name)
	}
	for _, name := range args.names {
		targets = append(targets, "!ARGS_NAMES:"+name)
	}
	var out []string
	for pl := 2; pl <= 4; pl++ {
		out = append(out, fmt.Sprintf(`SecRuleUpdateTargetByTag "paranoia-level/%d" "%s"`, pl, strings.Join(targets, "|")))
	}
	// SQL statements for the SQL sandbox: no SQL-injection rule and no shell-expression rule
	// (a comparison with a subquery, "> (SELECT", reads as process substitution), at any
	// level. The sandbox parses the statement and runs only its own printed tree, never a
	// shell.
	if len(args.sql) > 0 {
		var sql []string
		for _, name := range args.sql {
			sql = append(sql, "!ARGS:"+name)
		}
		for _, tag := range []string{"attack-sqli", "attack-rce"} {
			out = append(out, fmt.Sprintf(`SecRuleUpdateTargetByTag "%s" "%s"`, tag, strings.Join(sql, "|")))
		}
	}
	// URLs stored or matched, never fetched (TEXT_KIND_URL): no remote-file-inclusion or SSRF
	// rule, at any level (a merchant's back office on http://127.0.0.1:8081/ or
	// http://localhost/ reads as one to 931100 and 934110). Every other rule still inspects
	// them.
	if len(args.urls) > 0 {
		var urls []string
		for _, name := range args.urls {
			urls = append(urls, "!ARGS:"+name)
		}
		for _, tag := range []string{"attack-rfi", "attack-ssrf"} {
			out = append(out, fmt.Sprintf(`SecRuleUpdateTargetByTag "%s" "%s"`, tag, strings.Join(urls, "|")))
		}
	}
	// Signed tokens: no rule at all (every CRS rule carries the tag OWASP_CRS). The service
	// verifies the signature before it reads anything of the token.
	if len(args.credentials) > 0 {
		var creds []string
		for _, name := range args.credentials {
			creds = append(creds, "!ARGS:"+name)
		}
		out = append(out, fmt.Sprintf(`SecRuleUpdateTargetByTag "OWASP_CRS" "%s"`, strings.Join(creds, "|")))
	}
	return out
})

// level1Only are the arguments inspected by the level-1 rules only: values (ARGS) and names
// (ARGS_NAMES), named as Coraza names them: a JSON body's as the typed JSON processor does
// (json.a.b), a query's as sent; a regular expression (/.../) for list elements and for
// everything beneath a message or Struct. An argument is named, not an endpoint's field: a
// path one RPC marks holds for every RPC whose body has it.
type level1Only struct{ values, names, sql, credentials, urls []string }

var contractLevel1Only = sync.OnceValue(func() level1Only { return level1OnlyOf(protoregistry.GlobalFiles) })

// level1OnlyOf reads the text_kind options of the request fields of every ShopMind RPC with
// an HTTP binding, at the paths its binding puts them: under json. for the body, as query
// names for the rest (path variables are neither).
func level1OnlyOf(files *protoregistry.Files) level1Only {
	values, names, whole := map[string]bool{}, map[string]bool{}, map[string]commonv1.TextKind{}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "shopmind.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			methods := fd.Services().Get(i).Methods()
			for j := 0; j < methods.Len(); j++ {
				in := methods.Get(j).Input()
				rule, _ := proto.GetExtension(methods.Get(j).Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				for _, b := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					skip := pathVariables(b)
					switch body := b.GetBody(); body {
					case "*":
						jsonArgs(in, []string{"json"}, values, names, whole, nil)
					case "":
						queryArgs(in, "", skip, values, whole, nil)
					default:
						if f := in.Fields().ByName(protoreflect.Name(body)); f != nil && f.Message() != nil {
							jsonArgs(f.Message(), []string{"json"}, values, names, whole, nil)
						}
						skip[body] = true
						queryArgs(in, "", skip, values, whole, nil)
					}
				}
			}
		}
		return true
	})
	of := func(k commonv1.TextKind) []string {
		var out []string
		for name, kind := range whole {
			if kind == k {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	return level1Only{values: slices.Sorted(maps.Keys(values)), names: slices.Sorted(maps.Keys(names)),
		sql: of(commonv1.TextKind_TEXT_KIND_SQL), credentials: of(commonv1.TextKind_TEXT_KIND_CREDENTIAL),
		urls: of(commonv1.TextKind_TEXT_KIND_URL)}
}

// jsonArgs adds the marked fields of a JSON body message, at path (segments of a regular
// expression when one is a pattern: a list index); whole gets the SQL, credential and URL
// fields, which whole rule families leave alone (URL fields are also level-1-only values).
func jsonArgs(md protoreflect.MessageDescriptor, path []string, values, names map[string]bool, whole map[string]commonv1.TextKind, visiting []protoreflect.FullName) {
	if slices.Contains(visiting, md.FullName()) {
		return
	}
	visiting = append(visiting, md.FullName())
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		at := append(slices.Clone(path), string(f.Name())) // [A-Za-z0-9_]: nothing to escape
		if f.IsList() {
			at = append(at, "[0-9]+")
		}
		object := f.Message() != nil && (f.IsMap() || !jsonScalar(f.Message().FullName()))
		switch textKind(f) {
		case commonv1.TextKind_TEXT_KIND_FREE, commonv1.TextKind_TEXT_KIND_FIELD_NAMES:
			if object {
				values[argBeneath(at)] = true
			} else {
				values[argAt(at)] = true
			}
		case commonv1.TextKind_TEXT_KIND_URL:
			name := argAt(at)
			if object {
				name = argBeneath(at)
			}
			values[name], whole[name] = true, commonv1.TextKind_TEXT_KIND_URL
		case commonv1.TextKind_TEXT_KIND_SQL_WORD_NAME:
			names[argBeneath(at)] = true
		case commonv1.TextKind_TEXT_KIND_SQL, commonv1.TextKind_TEXT_KIND_CREDENTIAL:
			if !object {
				whole[argAt(at)] = textKind(f)
			}
		}
		if object && !f.IsMap() && !strings.HasPrefix(string(f.Message().FullName()), "google.protobuf.") {
			jsonArgs(f.Message(), at, values, names, whole, visiting)
		}
	}
}

// queryArgs adds the marked fields of a request read from the query (nested messages as
// dotted names, as grpc-gateway reads them), but for skip: path variables and the body.
func queryArgs(md protoreflect.MessageDescriptor, prefix string, skip, values map[string]bool, whole map[string]commonv1.TextKind, visiting []protoreflect.FullName) {
	if slices.Contains(visiting, md.FullName()) {
		return
	}
	visiting = append(visiting, md.FullName())
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		name := prefix + string(f.Name())
		if skip[name] {
			continue
		}
		switch k := textKind(f); k {
		case commonv1.TextKind_TEXT_KIND_FREE, commonv1.TextKind_TEXT_KIND_FIELD_NAMES:
			values[name] = true
		case commonv1.TextKind_TEXT_KIND_URL:
			values[name], whole[name] = true, k
		case commonv1.TextKind_TEXT_KIND_CREDENTIAL:
			whole[name] = k
		}
		if f.Message() != nil && !f.IsMap() && !f.IsList() && !strings.HasPrefix(string(f.Message().FullName()), "google.protobuf.") {
			queryArgs(f.Message(), name+".", skip, values, whole, visiting)
		}
	}
}

func textKind(f protoreflect.FieldDescriptor) commonv1.TextKind {
	k, _ := proto.GetExtension(f.Options(), commonv1.E_TextKind).(commonv1.TextKind)
	return k
}

// jsonScalar reports whether protojson writes a message type as one JSON value rather than an
// object (field masks, timestamps, durations, wrappers).
func jsonScalar(name protoreflect.FullName) bool {
	return strings.HasPrefix(string(name), "google.protobuf.") &&
		name != "google.protobuf.Struct" && name != "google.protobuf.Value" && name != "google.protobuf.ListValue"
}

// argAt names the argument at path: the name itself, or a regular expression matching it
// whole when a segment is a pattern.
func argAt(path []string) string {
	if !slices.Contains(path, "[0-9]+") {
		return strings.Join(path, ".")
	}
	return `/^` + strings.Join(path, `\.`) + `$/`
}

// argBeneath is a regular expression matching every argument beneath path.
func argBeneath(path []string) string { return `/^` + strings.Join(path, `\.`) + `\./` }

// pathVariables are the fields a binding's URL template fills ({id}, {metric.id=...}).
func pathVariables(b *annotations.HttpRule) map[string]bool {
	template := b.GetGet() + b.GetPut() + b.GetPost() + b.GetDelete() + b.GetPatch() + b.GetCustom().GetPath()
	out := map[string]bool{}
	for _, m := range templateVariable.FindAllStringSubmatch(template, -1) {
		out[m[1]] = true
	}
	return out
}

var templateVariable = regexp.MustCompile(`\{([^}=]+)`)
