// The built-in question grammar: a question (and the conversation before it) read into a
// query plan with the tenant's lexicon (its metrics' names, display names and synonyms, and
// the members of its dimensions from its own data), or one short clarifying question.

package offline

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/period"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
)

// Lexicon is what the grammar knows of a tenant: its metrics and its dimension members.
type Lexicon struct {
	Metrics []agent.MetricInfo
	// Members by dimension (shop, platform, category, root_category, goods).
	Members map[string][]plan.Member
	terms   []memberTerm
	refs    []termRef // the metric words, longest first
}

type memberTerm struct {
	term   string
	dim    string
	member plan.Member
	score  int // 3 full name, 2 the Chinese or English name, 1 a distinctive part
}

// platformAliases are the usual names of the platforms' keys.
var platformAliases = map[string][]string{
	"tmall": {"tmall", "天猫", "t-mall"}, "taobao": {"taobao", "淘宝"}, "jd": {"jd", "京东", "jd.com", "jingdong"},
	"pdd": {"pdd", "拼多多", "pinduoduo"}, "douyin": {"douyin", "抖音", "tiktok"}, "kuaishou": {"kuaishou", "快手"},
}

// weakTerms name sales only when no other metric is named ("sold" in "units sold").
var weakTerms = map[string]bool{"sell": true, "sold": true, "selling": true, "卖得": true, "卖的": true, "made": true, "make": true,
	"bring in": true, "brought in": true,
	"how are we doing": true, "how did we do": true, "how is business": true, "how's business": true, "生意怎么样": true, "卖得怎么样": true}

// grammarWords are never a member's distinctive part alone ("trend" is a series, "daily" a grain).
var grammarWords = func() map[string]bool {
	out := map[string]bool{}
	for _, ts := range []map[string][]string{granularityTerms, dimensionTerms, builtinTerms} {
		for _, terms := range ts {
			for _, t := range terms {
				out[t] = true
			}
		}
	}
	for _, w := range []string{"daily", "weekly", "monthly", "best", "top", "total", "average", "growth", "share", "refund", "orders"} {
		out[w] = true
	}
	return out
}()

var genericWords = map[string]bool{"store": true, "shop": true, "flagship": true, "official": true, "group": true, "the": true,
	"and": true, "of": true, "specialty": true, "outlet": true, "online": true, "new": true}

var genericSuffixes = []string{"旗舰店", "专营店", "自营店", "专卖店", "拼团店", "官方店", "店"}

// NewLexicon builds the lexicon's member words: a member's full name, its Chinese and
// English names, and (shops, categories) its distinctive parts, so "Trend Apparel" and
// "潮流服饰" find "潮流服饰旗舰店 Trend Apparel Flagship".
func NewLexicon(metrics []agent.MetricInfo, members map[string][]plan.Member) *Lexicon {
	lx := &Lexicon{Metrics: metrics, Members: members, refs: metricRefs(metrics)}
	sort.SliceStable(lx.refs, func(i, j int) bool { return len(lx.refs[i].term) > len(lx.refs[j].term) })
	add := func(term, dim string, m plan.Member, score int) {
		term = strings.TrimSpace(strings.ToLower(agent.FoldText(term)))
		if len([]rune(term)) < 2 {
			return
		}
		lx.terms = append(lx.terms, memberTerm{term, dim, m, score})
	}
	for dim, ms := range members {
		for _, m := range ms {
			label := m.Label
			if label == "" {
				label = m.Key
			}
			add(label, dim, m, 3)
			if dim == "platform" {
				for _, a := range platformAliases[strings.ToLower(m.Key)] {
					add(a, dim, m, 3)
				}
				continue
			}
			zh, en := splitName(label)
			if zh != "" && zh != label {
				add(zh, dim, m, 2)
			}
			if en != "" && en != label {
				add(en, dim, m, 2)
			}
			if dim != "shop" {
				continue
			}
			for _, suf := range genericSuffixes {
				if core, ok := strings.CutSuffix(zh, suf); ok && len([]rune(core)) >= 2 {
					add(core, dim, m, 1)
					break
				}
			}
			var words []string
			for _, w := range strings.Fields(strings.ToLower(en)) {
				if !genericWords[w] {
					words = append(words, w)
				}
			}
			if len(words) > 1 {
				add(strings.Join(words, " "), dim, m, 1)
			}
			for _, w := range words {
				if len(w) >= 4 && !grammarWords[w] {
					add(w, dim, m, 1)
				}
			}
		}
	}
	// A category name that is also part of a shop's name ("家居" of 家居生活旗舰店, "Home" of
	// Home Living Flagship) names the shop too, at the lowest score: findMembers keeps both,
	// and ParsePlan asks which is meant unless a word beside it says (家居类, the Home store).
	for _, cd := range []string{"category", "root_category"} {
		for _, c := range members[cd] {
			zh, en := splitName(c.Label)
			for _, s := range members["shop"] {
				szh, sen := splitName(s.Label)
				if zh != "" && len([]rune(zh)) >= 2 && strings.Contains(szh, zh) {
					add(zh, "shop", s, 0)
				}
				if en != "" && containsWords(strings.ToLower(sen), strings.ToLower(en)) {
					add(en, "shop", s, 0)
				}
			}
		}
	}
	sort.SliceStable(lx.terms, func(i, j int) bool {
		if len(lx.terms[i].term) != len(lx.terms[j].term) {
			return len(lx.terms[i].term) > len(lx.terms[j].term)
		}
		if lx.terms[i].term != lx.terms[j].term { // one term's members stay together (findMembers)
			return lx.terms[i].term < lx.terms[j].term
		}
		return lx.terms[i].score > lx.terms[j].score
	})
	return lx
}

// containsWords reports whether the words of sub stand, in order, among the words of s.
func containsWords(s, sub string) bool {
	return strings.Contains(" "+strings.Join(strings.Fields(s), " ")+" ", " "+strings.Join(strings.Fields(sub), " ")+" ")
}

// splitName splits "潮流服饰旗舰店 Trend Apparel Flagship" into its Chinese and English parts.
func splitName(s string) (zh, en string) {
	var z, e []string
	for _, f := range strings.Fields(s) {
		if agent.HasHan(f) {
			z = append(z, f)
		} else {
			e = append(e, f)
		}
	}
	return strings.Join(z, ""), strings.Join(e, " ")
}

// memberCache keeps each tenant's members for a few minutes.
type memberCache struct {
	mu    sync.Mutex
	items map[int64]cachedMembers
}

type cachedMembers struct {
	at      time.Time
	members map[string][]plan.Member
}

const memberTTL = 5 * time.Minute

// LoadMembers reads the members of shop, platform, category, root_category and goods from the tenant's
// data: the preview of an order metric (shop, platform) and of an order-line metric
// (category, goods) by each dimension over the last year.
func LoadMembers(ctx context.Context, a agent.Analytics, metrics []agent.MetricInfo, now time.Time) (map[string][]plan.Member, error) {
	var orderM, lineM string
	for _, m := range metrics {
		if m.Additive && m.Grain == agent.GrainOrder && (orderM == "" || m.Name == "order_count") {
			orderM = m.Name
		}
		if m.Additive && m.Grain == agent.GrainLine && (lineM == "" || m.Name == "line_amount") {
			lineM = m.Name
		}
	}
	out := map[string][]plan.Member{}
	today := period.Day(now)
	start, end := today.AddDate(-1, 0, 0), today.AddDate(0, 0, 1)
	for _, d := range []struct{ dim, metric string }{{"shop", orderM}, {"platform", orderM}, {"category", lineM}, {"root_category", lineM}, {"goods", lineM}} {
		if d.metric == "" {
			continue
		}
		limit := int32(10000)
		resp, err := a.PreviewQuery(ctx, &analysisv1.PreviewQueryRequest{MetricNames: []string{d.metric}, Dimensions: []string{d.dim},
			StartTime: timestamp(start), EndTime: timestamp(end), Limit: &limit})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		p := plan.Plan{Metrics: []string{d.metric}, Dimensions: []string{d.dim}}
		for _, r := range plan.RowsOf(resp, p.Metrics, p.Dimensions) {
			if r.Key != "" && (d.dim != "root_category" || r.Key != "0") { // 0: goods placed on a root
				out[d.dim] = append(out[d.dim], plan.Member{Key: r.Key, Label: r.Label})
			}
		}
	}
	return out, nil
}

func (c *memberCache) get(ctx context.Context, tenant int64, a agent.Analytics, metrics []agent.MetricInfo, now time.Time) (map[string][]plan.Member, error) {
	c.mu.Lock()
	if it, ok := c.items[tenant]; ok && time.Since(it.at) < memberTTL {
		c.mu.Unlock()
		return it.members, nil
	}
	c.mu.Unlock()
	m, err := LoadMembers(ctx, a, metrics, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.items == nil {
		c.items = map[int64]cachedMembers{}
	}
	c.items[tenant] = cachedMembers{time.Now(), m}
	c.mu.Unlock()
	return m, nil
}

// Clarify is the one short question asked instead of guessing.
type Clarify struct {
	Question string
	Choices  []string
}

// Parsed is what the grammar read: a plan, or a clarifying question (or neither: no metric
// was named and nothing else asks for one).
type Parsed struct {
	Plan    *plan.Plan
	Clarify *Clarify
	// Question is the older parse (metrics, dimension, period words) the plan was built from.
	Question Question
	// FollowUp is true when the plan changed the conversation's previous plan.
	FollowUp bool
	// Advanced is true when the plan asks for more than a total, a split or a series of the
	// whole tenant (filters, ranking order, share, growth, comparison, drivers, listing).
	Advanced bool
}

var (
	whyRE          = regexp.MustCompile(`\bwhy\b|what (?:drove|caused|explains|is behind)|\bdrivers?\b|\bcontribut\w*|为什么|为何|原因|什么导致|归因|驱动|贡献`)
	growthRE       = regexp.MustCompile(`\bgrew\b|\bgrow\w*|\bgrowth\b|fastest|increased? (?:the )?most|biggest (?:increase|gain|drop|decline|fall)|declin\w* (?:the )?most|dropped (?:the )?most|fell (?:the )?most|shr[ua]nk|增长最快|增速|涨幅|增长最多|增长最大|增幅|下降最多|下滑最多|跌幅|降幅|减少最多|下降最快`)
	downRE         = regexp.MustCompile(`declin|\bdrop|\bfell\b|\bfall|shr[ua]nk|decreas|下降|下滑|跌|减少|降幅`)
	shareRE        = regexp.MustCompile(`\bshare\b|proportion|percentage|\bpercent\b|% of|\bsplit\b|\bmix\b|\bportion\b|\baccount(?:s|ed)? for\b|占比|比例|比重|份额|构成`)
	compareRE      = regexp.MustCompile(`\bvs\.?\b|versus|compar|对比|比较|相比|环比|同比|year over year|\byoy\b|\bmom\b|month over month|same period last year|去年同期|\bthan\b|\bagainst\b|change[ds]? (?:from|since|on)|比上|较上|跟.{1,40}比|和.{1,40}比(?:呢|\s*[,，。?？]|$)|比起|比一下`)
	yoyRE          = regexp.MustCompile(`同比|year over year|\byoy\b|same period last year|去年同期|a year (?:ago|earlier)|last year's|vs\.? last year|compared (?:to|with) last year|比去年`)
	ascRE          = regexp.MustCompile(`lowest|\bleast\b|\bworst\b|\bbottom\b|smallest|fewest|weakest|poorest|最低|最少|最差|垫底|倒数|最小|最弱|最不`)
	rankRE         = regexp.MustCompile(`highest|\bmost\b|\bbest\b|\btop\b|largest|biggest|leading|strongest|\brank|最高|最多|最好|最大|最强|排名|排行|前\s*\d|前[一二三四五六七八九十]|哪个|哪家|哪款|哪类|哪一|哪些|\bwhich\b|\bwho\b|lowest|\bleast\b|\bworst\b|\bbottom\b|smallest|fewest|最低|最少|最差|垫底|倒数`)
	listRE         = regexp.MustCompile(`(above|over|more than|greater than|at least|exceed\w*|below|under|less than|fewer than|at most|大于|超过|高于|多于|不低于|至少|小于|低于|少于|不足|不到|不超过)\s*(?:¥|￥|\$)?\s*(\d+(?:\.\d+)?)\s*(%|万|k\b|千)?`)
	zeroRE         = regexp.MustCompile(`\bno (?:sales|orders)\b|没有(?:销售|订单|卖出)|零销售|没卖出`)
	perGroupRE     = regexp.MustCompile(`(?:in|within|for|of) each (shop|store|platform|channel|category)|(?:per|by) (shop|store|platform|channel|category)\b.*\btop\b|每个(店铺|平台|类目|渠道|门店)|各(店铺|平台|类目|渠道|门店)(?:的|各自)?(?:前|top|最)`)
	followRE       = regexp.MustCompile(`^(?:and|what about|how about|only|just|same for|same but|now|instead|then|also|but|ok|okay)\b|\binstead\b|^(?:那|那么|只看|仅看|只要|改成|换成|改为|换为|再看|如果|同样|还有)|呢\s*[？?]?\s*$|^(?:by|in|for|per|switch(?:ed)? to|change (?:it )?to|make it)\b`)
	exclRE         = regexp.MustCompile(`(?:除了|除去|除)(.{1,60}?)(?:之外|以外|外)|(?:不含|不包括|不算|排除|剔除|去掉|去除|除去|除了)(.{1,40}?)(?:[，,。？?的]|$)|\b(?:except(?: for)?|excluding|exclude|other than|apart from|but not|not including|without|leaving out|leave out|not counting)\s+(.{1,60}?)(?:[,.?;]|$|\s+(?:in|for|during|by|last|this|over|on|from)\b)`)
	splitRE        = regexp.MustCompile(`\b(?:by|per|each|every|across|breakdown)\b|各|每|按|分`)
	allRE          = regexp.MustCompile(`\ball (?:shops|stores|platforms|categories)\b|所有(?:店铺|平台|类目)|全部(?:店铺|平台|类目)|不限`)
	orderedDimRefs = dimRefs([]string{"shop", "platform", "category", "root_category", "goods", "staff", "status"})
	// "every shop but X", "each platform except Y": all of them but X (an exclusion, not a split)
	everyButRE = regexp.MustCompile(`\b(?:every|each)\s+(shops?|stores?|platforms?|channels?|categor(?:y|ies))\s+(?:but|except)\b`)
	// money asked of refunds ("how much money did we refund"): the refund amount
	moneyRE = regexp.MustCompile(`how much money|\bamount\b|\bvalue\b|多少钱|金额|钱`)
	// "the month before", "前一个月": the period before the conversation's
	beforeRE  = regexp.MustCompile(`\b(?:the\s+)?(?:month|quarter|week|year|period|day)\s+before\b|\bthe\s+previous\s+(?:month|quarter|week|year|period)\b|前一个?(?:月|季度|周|星期|年|期|天)|再?上一期`)
	dimPlural = map[string]string{"store": "shop", "channel": "platform", "店铺": "shop", "门店": "shop", "平台": "platform", "渠道": "platform", "类目": "category"}
)

type memberHit struct {
	start, end int
	dim        string
	members    []plan.Member
	exclude    bool
	// shops named by the same words as the hit's category members (or the categories
	// named like its shop members): which one is meant is asked unless a word beside says
	otherDim string
	others   []plan.Member
}

// isCategoryDim is true for the category dimensions.
func isCategoryDim(d string) bool { return d == "category" || d == "root_category" }

// findMembers finds the members named in t (lowercased, normalized), longest names first,
// masking them; several members of one dimension under the same words are an ambiguity.
func (lx *Lexicon) findMembers(t string, masked []bool) []memberHit {
	var hits []memberHit
	for i := 0; i < len(lx.terms); {
		j := i
		for j < len(lx.terms) && lx.terms[j].term == lx.terms[i].term {
			j++
		}
		group := lx.terms[i:j]
		i = j
		for _, pos := range findTerm(t, group[0].term, masked) {
			best := 0
			for _, g := range group {
				best = max(best, g.score)
			}
			h := memberHit{start: pos, end: pos + len(group[0].term)}
			seen := map[string]bool{}
			for _, g := range group {
				if g.score != best {
					continue
				}
				if h.dim == "" {
					h.dim = g.dim
				}
				if g.dim != h.dim || seen[g.member.Key] {
					continue
				}
				seen[g.member.Key] = true
				h.members = append(h.members, g.member)
			}
			// the same words naming a shop and a category
			for _, g := range group {
				if g.dim != h.dim && (g.dim == "shop" && isCategoryDim(h.dim) || h.dim == "shop" && isCategoryDim(g.dim)) &&
					(h.otherDim == "" || h.otherDim == g.dim) && !seen[g.dim+"/"+g.member.Key] {
					seen[g.dim+"/"+g.member.Key] = true
					h.otherDim = g.dim
					h.others = append(h.others, g.member)
				}
			}
			mask(masked, h.start, h.end)
			hits = append(hits, h)
		}
	}
	sort.Slice(hits, func(a, b int) bool { return hits[a].start < hits[b].start })
	return hits
}

var (
	// a word right after a name that says it is a category ("家居类", "the Virtual category")
	categoryAfterRE = regexp.MustCompile(`^\s*(?:类|品类|分类|categor(?:y|ies)\b)`)
	// or a shop ("the Home store", "家居店")
	shopAfterRE = regexp.MustCompile(`^\s*(?:店|shops?\b|stores?\b)`)
	// or before it ("category Home", "类目家居")
	categoryBeforeRE = regexp.MustCompile(`(?:\bcategor(?:y|ies)|类目|品类|分类)\s*$`)
	shopBeforeRE     = regexp.MustCompile(`(?:\bshops?|\bstores?|店铺)\s*$`)
)

// shopOrCategory settles a name that is both a shop's and a category's by the word beside
// it: the hit narrowed to the dimension it names, or false when nothing says which.
func shopOrCategory(t string, h memberHit) (memberHit, bool) {
	after, before := t[h.end:], t[:h.start]
	want := ""
	switch {
	case categoryAfterRE.MatchString(after) || categoryBeforeRE.MatchString(before):
		want = "category"
	case shopAfterRE.MatchString(after) || shopBeforeRE.MatchString(before):
		want = "shop"
	default:
		return h, false
	}
	if (want == "shop") != (h.dim == "shop") {
		h.dim, h.members = h.otherDim, h.others
	}
	h.otherDim, h.others = "", nil
	return h, true
}

// ParsePlan reads a question into a plan with the lexicon. history is the conversation
// before it (oldest first): a follow-up ("only tmall", "改成订单数", "and in September?",
// "by category instead") changes the plan of the previous question.
func ParsePlan(text string, history []agent.Message, now time.Time, lx *Lexicon) Parsed {
	var prev *plan.Plan
	var users []string
	for _, m := range history {
		if m.Role == "user" && strings.TrimSpace(m.Content) != "" {
			users = append(users, m.Content)
		}
	}
	if len(users) > 4 {
		users = users[len(users)-4:]
	}
	for _, u := range users {
		if p := parseOne(u, prev, now, lx); p.Plan != nil {
			prev = p.Plan
		}
	}
	return parseOne(text, prev, now, lx)
}

func parseOne(text string, prev *plan.Plan, now time.Time, lx *Lexicon) Parsed {
	t := strings.ToLower(agent.NormalizeText(text))
	t = everyButRE.ReplaceAllString(t, "all $1 except")
	masked := make([]bool, len(t))
	// the period and a second one ("October vs September")
	var cmp, asked *period.Period
	p1, span, ok := period.Parse(t, now)
	first := periodHit{p1, span, ok}
	if ok {
		mask(masked, span[0], span[1])
		if compareRE.MatchString(t) || strings.Contains(t, "和") || strings.Contains(t, " and ") || strings.Contains(t, "与") || strings.Contains(t, "跟") {
			rest := []byte(t)
			for k := span[0]; k < span[1]; k++ {
				rest[k] = ' '
			}
			if p2, span2, ok2 := period.Parse(string(rest), now); ok2 {
				mask(masked, span2[0], span2[1])
				if span2[0] > span[0] {
					asked, cmp = &p1, &p2
				} else {
					asked, cmp = &p2, &p1
				}
			}
		}
	}
	// members first (their names hold words such as "trend" or "home"), then the rest of
	// the question without them
	hits := lx.findMembers(t, make([]bool, len(t)))
	rest := []byte(t)
	for _, h := range hits {
		mask(masked, h.start, h.end)
		for k := h.start; k < h.end; k++ {
			rest[k] = ' '
		}
	}
	q := parseQuestion(text, string(rest), first, lx.refs, lx.Metrics, nil)
	if asked != nil { // the period named first is the one asked about
		q.Period = *asked
	}
	q.Metrics = dropOrderCount(q.Metrics)
	if len(q.Metrics) > 1 && weakTerms[q.Terms["gmv"]] { // "sold the least units": units, not sales
		var ms []string
		for _, m := range q.Metrics {
			if m != "gmv" {
				ms = append(ms, m)
			}
		}
		q.Metrics = ms
	}
	read := refundReading(q.Metrics, t, lx.Metrics)
	reread := strings.Join(read, ",") != strings.Join(q.Metrics, ",") // the classic path would read the words alone
	q.Metrics = read
	out := Parsed{Question: q}
	// metric words are masked too (so a metric's words are no dimension)
	_, _ = matchTerms(t, masked, lx.refs)
	for _, loc := range exclRE.FindAllStringSubmatchIndex(t, -1) {
		for k := range hits {
			if hits[k].start >= loc[0] && hits[k].end <= loc[1] {
				hits[k].exclude = true
			}
		}
	}
	p := plan.Plan{Metrics: q.Metrics, Limit: q.TopN}
	p.SetPeriod(q.Period)
	byDim := map[string]int{}
	for _, h := range hits {
		if h.otherDim != "" {
			var ok bool
			if h, ok = shopOrCategory(t, h); !ok {
				shops, cats := h.members, h.others
				if h.dim != "shop" {
					shops, cats = cats, shops
				}
				var choices []string
				for _, m := range append(append([]plan.Member{}, shops...), cats...) {
					choices = append(choices, m.Label)
				}
				out.Clarify = &Clarify{Question: agent.Tr(q.ZH, "Do you mean the shop or the category?", "您指的是店铺还是类目？"), Choices: choices}
				return out
			}
		}
		if len(h.members) > 1 {
			var choices []string
			for _, m := range h.members {
				choices = append(choices, m.Label)
			}
			sort.Strings(choices)
			if len(choices) > 5 {
				choices = choices[:5]
			}
			out.Clarify = &Clarify{Question: agent.Tr(q.ZH, "Which "+plan.DimName(h.dim, false)+" do you mean?", "您指的是哪个"+plan.DimName(h.dim, true)+"？"), Choices: choices}
			return out
		}
		key := h.dim + strconv.FormatBool(h.exclude)
		if i, ok := byDim[key]; ok {
			p.Filters[i].Members = appendMember(p.Filters[i].Members, h.members[0])
			continue
		}
		byDim[key] = len(p.Filters)
		p.Filters = append(p.Filters, plan.Filter{Dimension: h.dim, Members: h.members, Exclude: h.exclude})
	}
	// dimensions: every dimension word not inside a member's name, in text order
	dims := dimensionsIn(t, masked)
	group := ""
	if m := perGroupRE.FindStringSubmatch(t); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				group = g
				if d, ok := dimPlural[g]; ok {
					group = d
				}
				break
			}
		}
	}
	// a dimension that only names the filter's members ("sales of the Trend shop") does not split
	var split []string
	splitWords := splitRE.MatchString(t) || rankRE.MatchString(t) || shareRE.MatchString(t) || growthRE.MatchString(t) || q.TopN > 0
	for _, d := range dims {
		filtered := false
		for _, f := range p.Filters {
			filtered = filtered || f.Dimension == d && (!f.Exclude || !splitWords)
		}
		if !filtered && !contains(split, d) {
			split = append(split, d)
		}
	}
	if group != "" && len(split) > 0 {
		other := ""
		for _, d := range split {
			if d != group {
				other = d
				break
			}
		}
		if other != "" {
			split = []string{group, other}
			p.PerGroup = true
		} else {
			group = ""
		}
	}
	if len(split) > 2 {
		split = split[:2]
	}
	// "what share of GMV came from Tmall": Tmall's share among the platforms, not a filter
	if len(split) == 0 && shareRE.MatchString(t) && len(p.Filters) == 1 && !p.Filters[0].Exclude {
		split = []string{p.Filters[0].Dimension}
		p.Filters = nil
	}
	p.Dimensions = split

	why := whyRE.MatchString(t)
	growth := growthRE.MatchString(t)
	share := shareRE.MatchString(t)
	comparison := compareRE.MatchString(t) || cmp != nil
	asc := ascRE.MatchString(t)
	ranking := rankRE.MatchString(t) || q.TopN > 0
	lm := listRE.FindStringSubmatch(t)
	zero := zeroRE.MatchString(t)
	if yoyRE.MatchString(t) {
		p.Compare = plan.CompareYearAgo
	} else if comparison {
		p.Compare = plan.ComparePrevious
	}
	if cmp != nil {
		p.CompareStart, p.CompareEnd = cmp.Start.Format(time.DateOnly), cmp.LastDay().Format(time.DateOnly)
	}
	if q.Granularity != "" {
		p.Grain = q.Granularity
	}
	switch {
	case why:
		p.Analysis = plan.Drivers
		p.Dimensions = nil
		if p.Compare == "" {
			p.Compare = plan.ComparePrevious
		}
	case len(p.Dimensions) > 0 && (lm != nil || zero) && !p.PerGroup:
		p.Analysis = plan.Members
		p.Dimensions = p.Dimensions[:1]
	case p.Grain != "":
		p.Analysis = plan.Trend
		if len(p.Dimensions) > 1 {
			p.Dimensions = p.Dimensions[:1]
		}
	case len(p.Dimensions) > 0 && growth:
		p.Analysis = plan.GrowthRanking
		if p.Compare == "" {
			p.Compare = plan.ComparePrevious
		}
		if downRE.MatchString(t) {
			p.Order = "asc"
		}
		p.Dimensions = p.Dimensions[len(p.Dimensions)-1:]
	case len(p.Dimensions) > 0 && share:
		p.Analysis = plan.Share
	case len(p.Dimensions) > 0 && ranking:
		p.Analysis = plan.Ranking
		if asc {
			p.Order = "asc"
		}
	case len(p.Dimensions) > 0 && comparison:
		p.Analysis = plan.Comparison
	case len(p.Dimensions) > 0:
		p.Analysis = plan.Breakdown
	case comparison || growth:
		p.Analysis = plan.Comparison
		if p.Compare == "" {
			p.Compare = plan.ComparePrevious
		}
	default:
		p.Analysis = plan.Value
	}
	if p.Analysis == plan.Members {
		metric := ""
		if len(p.Metrics) > 0 {
			metric = p.Metrics[len(p.Metrics)-1]
		}
		c := &plan.Threshold{Metric: metric, Op: "eq", Value: 0}
		if lm != nil {
			v, _ := strconv.ParseFloat(lm[2], 64)
			switch lm[3] {
			case "%":
				v /= 100
			case "万":
				v *= 10000
			case "k", "千":
				v *= 1000
			}
			c.Value = v
			switch lm[1] {
			case "above", "over", "more than", "greater than", "大于", "超过", "高于", "多于":
				c.Op = "gt"
			case "at least", "不低于", "至少":
				c.Op = "gte"
			case "at most", "不超过":
				c.Op = "lte"
			default:
				c.Op = "lt"
				if strings.HasPrefix(lm[1], "exceed") {
					c.Op = "gt"
				}
			}
		}
		p.Condition = c
	}

	follow := prev != nil && (followRE.MatchString(strings.TrimSpace(t)) || len(q.Metrics) == 0)
	if follow {
		np := *prev
		np.Filters = append([]plan.Filter(nil), prev.Filters...)
		if len(q.Metrics) > 0 {
			np.Metrics = q.Metrics
			if np.Condition != nil {
				np.Condition.Metric = q.Metrics[0]
			}
		}
		if allRE.MatchString(t) {
			np.Filters = nil
		}
		for _, f := range p.Filters {
			replaced := false
			for i := range np.Filters {
				if np.Filters[i].Dimension == f.Dimension {
					np.Filters[i], replaced = f, true
				}
			}
			if !replaced {
				np.Filters = append(np.Filters, f)
			}
		}
		switch {
		case q.PeriodGiven && comparison && cmp == nil:
			// "compare with September": the named period is the comparison's, the asked one stays
			np.CompareStart, np.CompareEnd = p.Start, p.End
			if np.Analysis == plan.Value {
				np.Analysis = plan.Comparison
			}
		case q.PeriodGiven:
			np.Start, np.End, np.PeriodKind = p.Start, p.End, p.PeriodKind
			np.CompareStart, np.CompareEnd = p.CompareStart, p.CompareEnd
		case beforeRE.MatchString(t):
			// "and the month before?": the period before the previous question's
			if pp, err := prev.PeriodOf(); err == nil {
				np.SetPeriod(pp.Previous())
				np.CompareStart, np.CompareEnd = "", ""
			}
		}
		if p.Compare != "" {
			np.Compare = p.Compare
		}
		if len(p.Dimensions) > 0 {
			np.Dimensions = p.Dimensions
			np.PerGroup = p.PerGroup
			if np.Analysis == plan.Value || np.Analysis == plan.Comparison && p.Analysis != plan.Comparison {
				np.Analysis = plan.Breakdown
			}
		}
		if p.Analysis != plan.Value && p.Analysis != plan.Breakdown {
			np.Analysis, np.Order, np.Grain = p.Analysis, p.Order, p.Grain
			if p.Condition != nil {
				np.Condition = p.Condition
			}
		}
		if q.TopN > 0 {
			np.Limit = q.TopN
		}
		if np.Analysis == plan.Drivers {
			np.Dimensions = nil
		}
		out.Plan, out.FollowUp, out.Advanced = &np, true, true
		return out
	}
	if len(p.Metrics) == 0 && (growth || why) && metricNamed(lx.Metrics, "gmv") {
		p.Metrics = []string{"gmv"} // "which category grew fastest": sales growth
	}
	if len(p.Metrics) == 0 {
		if ranking && len(p.Dimensions) > 0 || len(p.Filters) > 0 {
			out.Clarify = metricQuestion(lx.Metrics, q.ZH)
		}
		return out
	}
	if p.Condition != nil && p.Condition.Metric == "" {
		p.Condition.Metric = p.Metrics[0]
	}
	out.Plan = &p
	rate := false
	for _, m := range p.Metrics {
		rate = rate || strings.HasSuffix(m, "_rate")
	}
	classic := p.Analysis == plan.Value || p.Analysis == plan.Breakdown || p.Analysis == plan.Trend ||
		p.Analysis == plan.Ranking && p.Order != "asc" && !p.PerGroup
	out.Advanced = len(p.Filters) > 0 || !classic ||
		p.Compare != "" || p.PeriodKind == "quarter" || p.PeriodKind == "qtd" || p.PeriodKind == "half" || len(p.Dimensions) > 1 ||
		p.Analysis == plan.Breakdown && q.Dimension == "" || rate || reread
	return out
}

// refundReading reads refunds as the merchant means them: money asked of refunds ("how much
// money did we refund", "退了多少钱") is the refund amount; a percentage of orders refunded
// ("what percentage of orders got refunded") is the refund rate.
func refundReading(ms []string, t string, metrics []agent.MetricInfo) []string {
	if len(ms) != 1 || ms[0] != "refunded_orders" {
		return ms
	}
	switch {
	case moneyRE.MatchString(t) && metricNamed(metrics, "refund_amount"):
		return []string{"refund_amount"}
	case shareRE.MatchString(t) && !splitRE.MatchString(t) && metricNamed(metrics, "refund_rate"):
		return []string{"refund_rate"}
	}
	return ms
}

func metricNamed(ms []agent.MetricInfo, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// dropOrderCount leaves out order_count when a refund or cancellation metric was named:
// "orders were refunded" asks for refunded orders, not for orders too.
func dropOrderCount(ms []string) []string {
	special := false
	for _, m := range ms {
		special = special || m == "refunded_orders" || m == "cancelled_orders" || m == "refund_rate" || m == "refund_amount"
	}
	if !special {
		return ms
	}
	var out []string
	for _, m := range ms {
		if m != "order_count" && m != "gmv" {
			out = append(out, m)
		}
	}
	return out
}

func appendMember(ms []plan.Member, m plan.Member) []plan.Member {
	for _, x := range ms {
		if x.Key == m.Key {
			return ms
		}
	}
	return append(ms, m)
}

// dimensionsIn lists the dimensions named in t outside masked spans, in text order.
func dimensionsIn(t string, masked []bool) []string {
	m := append([]bool(nil), masked...)
	ds, _ := matchTerms(t, m, orderedDimRefs)
	return ds
}

// metricQuestion asks which measure a question means (best shop: by what?).
func metricQuestion(metrics []agent.MetricInfo, zh bool) *Clarify {
	var choices []string
	for _, name := range []string{"gmv", "order_count", "units_sold", "buyers"} {
		for _, m := range metrics {
			if m.Name == name {
				choices = append(choices, m.LabelIn(zh))
			}
		}
	}
	if len(choices) == 0 {
		for i, m := range metrics {
			if i == 4 {
				break
			}
			choices = append(choices, m.LabelIn(zh))
		}
	}
	return &Clarify{Question: agent.Tr(zh, "By which measure?", "按哪个指标来看？"), Choices: choices}
}

func timestamp(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
