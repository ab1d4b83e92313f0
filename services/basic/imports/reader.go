package imports

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/transform"
)

// FileError is a file the importer cannot read at all (not a CSV or xlsx file, an unknown
// header, a wrong encoding): the whole import is refused with Message.
type FileError struct{ Message string }

func (e *FileError) Error() string { return e.Message }

func fileErr(format string, args ...any) error {
	return &FileError{Message: fmt.Sprintf(format, args...)}
}

// RowError is one rejected row.
type RowError struct {
	Line   int64
	Column string
	Reason string
}

// Line is one order line.
type Line struct {
	SKU       string
	GoodsName string
	Quantity  int64
	UnitPrice int64 // cents
	Amount    int64 // cents
}

// Order is one order with its lines, as read.
type Order struct {
	OrderNo     string
	Shop        string // the row's shop column ("" when the file has none)
	Status      string
	Buyer       string
	Total       int64 // cents, before discounts
	Discount    int64
	Paid        int64
	Refund      int64
	OrderedAt   time.Time
	PaidAt      *time.Time
	ShippedAt   *time.Time
	CompletedAt *time.Time
	Lines       []Line
	// Rows is how many rows of the file the order took.
	Rows int64
}

// ItemCount is the order's units.
func (o *Order) ItemCount() int64 {
	var n int64
	for _, l := range o.Lines {
		n += l.Quantity
	}
	return n
}

// Digest identifies the order's content: an order imported again with the same digest
// changes nothing.
func (o *Order) Digest() []byte {
	h := sha256.New()
	var b [8]byte
	num := func(v int64) { binary.LittleEndian.PutUint64(b[:], uint64(v)); h.Write(b[:]) }
	str := func(s string) { num(int64(len(s))); io.WriteString(h, s) }
	tm := func(t *time.Time) {
		if t == nil {
			num(math.MinInt64)
		} else {
			num(t.Unix())
		}
	}
	str(o.Status)
	str(o.Buyer)
	num(o.Total)
	num(o.Discount)
	num(o.Paid)
	num(o.Refund)
	tm(&o.OrderedAt)
	tm(o.PaidAt)
	tm(o.ShippedAt)
	tm(o.CompletedAt)
	for _, l := range o.Lines {
		str(l.SKU)
		str(l.GoodsName)
		num(l.Quantity)
		num(l.UnitPrice)
		num(l.Amount)
	}
	return h.Sum(nil)
}

// Options of a Reader.
type Options struct {
	// Format: "" (detect), a name of Formats, or "mapped" with Mapping.
	Format  string
	Mapping string
	// Encoding: "" (detect), "utf-8" or "gb18030".
	Encoding string
	// MaxRows bounds the data rows (0: none); beyond it Next returns ErrTooManyRows.
	MaxRows int64
}

// ErrTooManyRows: the file has more data rows than Options.MaxRows.
var ErrTooManyRows = errors.New("too many rows")

// Reader reads orders from a file.
type Reader struct {
	format   *Format
	encoding string
	rows     rowSource
	idx      [numFields]int
	names    [numFields]string
	maxRows  int64
	rowsRead int64

	pending    *Order // the order being assembled
	pendingErr bool   // a row of it was rejected (Shopify: its first row)
	errs       []RowError
	done       bool
	r          row
	layout     string // the time layout that read the last time
}

// rowSource yields the file's rows: the record (valid until the next call) and its line.
type rowSource interface {
	next() ([]string, int64, error)
}

// NewReader reads the header row of r and picks the format. A FileError says why a file
// cannot be read.
func NewReader(r io.Reader, opts Options) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	head, _ := br.Peek(64 << 10)
	if len(head) == 0 {
		return nil, fileErr("the file is empty")
	}
	rd := &Reader{maxRows: opts.MaxRows}
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		src, err := newXLSX(br)
		if err != nil {
			return nil, err
		}
		rd.rows, rd.encoding = src, "xlsx"
	} else {
		enc, err := detectEncoding(head, opts.Encoding)
		if err != nil {
			return nil, err
		}
		var text io.Reader = br
		if enc == "utf-8" && bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
			_, _ = br.Discard(3)
		}
		if enc == "gb18030" {
			text = transform.NewReader(br, simplifiedchinese.GB18030.NewDecoder())
		}
		rd.rows, rd.encoding = newCSV(text, head), enc
	}
	header, _, err := rd.rows.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fileErr("the file has no header row")
		}
		return nil, fileErr("the header row cannot be read: %v", err)
	}
	for _, h := range header {
		if strings.ContainsRune(h, 0) {
			return nil, fileErr("not a CSV file: the header row holds binary data (NUL bytes)")
		}
		if !utf8.ValidString(h) || strings.ContainsRune(h, utf8.RuneError) {
			return nil, fileErr("the header row is not valid %s text; name the encoding (utf-8 or gb18030)", rd.encoding)
		}
	}
	header = append([]string(nil), header...)
	if err := rd.pickFormat(header, opts); err != nil {
		return nil, err
	}
	return rd, nil
}

// detectEncoding: a named encoding, else a UTF-8 byte order mark, else UTF-8 when head is
// valid UTF-8 (a rune cut at the end of head allowed), else GB18030. Binary data is refused.
func detectEncoding(head []byte, named string) (string, error) {
	// Binary: a NUL byte in the first line, or control bytes (other than tab, CR, LF) in
	// more than 1% of the first 8 KiB. A NUL byte further on is one bad row, rejected alone.
	probe := head[:min(len(head), 8<<10)]
	first := probe
	if i := bytes.IndexByte(probe, '\n'); i >= 0 {
		first = probe[:i]
	}
	ctl := 0
	for _, c := range probe {
		if c < 0x20 && c != '\t' && c != '\r' && c != '\n' {
			ctl++
		}
	}
	if bytes.IndexByte(first, 0) >= 0 || ctl*100 > len(probe) {
		return "", fileErr("not a CSV or xlsx file: it holds binary data")
	}
	switch named {
	case "utf-8", "gb18030":
		return named, nil
	}
	if bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
		return "utf-8", nil
	}
	valid := head
	if len(head) == 64<<10 { // possibly cut in the middle of a rune
		for i := 0; i < 3 && len(valid) > 0 && !utf8.Valid(valid); i++ {
			valid = valid[:len(valid)-1]
		}
	}
	if utf8.Valid(valid) {
		return "utf-8", nil
	}
	// Not valid UTF-8: GB18030 when it reads as GB18030 with fewer bad sequences (a UTF-8
	// file with a few bad bytes stays UTF-8, its bad rows rejected).
	gb, _ := simplifiedchinese.GB18030.NewDecoder().Bytes(valid)
	if badRunes(gb) < badRunes(valid) {
		return "gb18030", nil
	}
	return "utf-8", nil
}

// badRunes counts invalid UTF-8 sequences and replacement characters.
func badRunes(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError {
			n++
		}
		b = b[size:]
	}
	return n
}

// pickFormat finds the format named or the one the header matches.
func (rd *Reader) pickFormat(header []string, opts Options) error {
	switch opts.Format {
	case "":
		for _, f := range Formats {
			if idx, names, missing := f.headerIndex(header); len(missing) == 0 {
				rd.format, rd.idx, rd.names = f, idx, names
				return nil
			}
		}
		return fileErr("the header row matches no known format (shopmind, shopify, taobao, jd, pdd); name the format, or give a column mapping with format mapped. Header: %s", clip(strings.Join(header, ","), 200))
	case "mapped":
		f, err := Mapped(opts.Mapping)
		if err != nil {
			return fileErr("mapping: %v", err)
		}
		rd.format = f
	default:
		rd.format = FormatByName(opts.Format)
		if rd.format == nil {
			return fileErr("unknown format %q", opts.Format)
		}
	}
	idx, names, missing := rd.format.headerIndex(header)
	if len(missing) > 0 {
		other := ""
		for _, f := range Formats {
			if _, _, m := f.headerIndex(header); len(m) == 0 && f != rd.format {
				other = fmt.Sprintf(" (the header is %s's)", f.Name)
				break
			}
		}
		return fileErr("the header row is not a %s export%s: missing column(s) %s", rd.format.Name, other, strings.Join(missing, ", "))
	}
	rd.idx, rd.names = idx, names
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Format is the format in use.
func (rd *Reader) Format() *Format { return rd.format }

// Encoding is the encoding in use (utf-8, gb18030, xlsx).
func (rd *Reader) Encoding() string { return rd.encoding }

// RowsRead counts the data rows read so far.
func (rd *Reader) RowsRead() int64 { return rd.rowsRead }

// TakeErrors returns the rows rejected since the last call.
func (rd *Reader) TakeErrors() []RowError {
	e := rd.errs
	rd.errs = nil
	return e
}

// Next returns the next complete order, io.EOF after the last. Rows of one order must be
// consecutive (as every platform exports them). Rejected rows are collected (TakeErrors).
func (rd *Reader) Next() (*Order, error) {
	for !rd.done {
		rec, line, err := rd.rows.next()
		if errors.Is(err, io.EOF) {
			rd.done = true
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				rd.rowsRead++
				rd.errs = append(rd.errs, RowError{Line: int64(pe.StartLine), Reason: "malformed CSV: " + pe.Err.Error()})
				continue
			}
			return nil, err
		}
		if rd.maxRows > 0 && rd.rowsRead >= rd.maxRows {
			return nil, ErrTooManyRows
		}
		if blank(rec) {
			continue
		}
		rd.rowsRead++
		if done := rd.take(rec, line); done != nil {
			return done, nil
		}
	}
	if o := rd.pending; o != nil {
		rd.pending = nil
		return o, nil
	}
	return nil, io.EOF
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// take reads one row; it returns the previous order when this row starts another.
func (rd *Reader) take(rec []string, line int64) *Order {
	r := &rd.r
	r.rec, r.idx, r.line = rec, &rd.idx, line
	for i, v := range rec {
		if strings.IndexByte(v, 0) >= 0 {
			rd.reject(line, rd.columnName(i), "NUL byte in the cell")
			return nil
		}
		if rd.encoding == "utf-8" && !utf8.ValidString(v) {
			rd.reject(line, rd.columnName(i), "invalid UTF-8 (the file is read as UTF-8)")
			return nil
		}
		if rd.encoding == "gb18030" && strings.ContainsRune(v, utf8.RuneError) {
			rd.reject(line, rd.columnName(i), "bytes that are not GB18030 text")
			return nil
		}
	}
	no := clean(r.get(FOrderNo))
	if no == "" {
		rd.reject(line, rd.names[FOrderNo], "missing order number")
		return nil
	}
	if len(no) > 128 {
		rd.reject(line, rd.names[FOrderNo], "order number longer than 128 characters")
		return nil
	}
	var done *Order
	continuing := rd.pending != nil && rd.pending.OrderNo == no
	if !continuing {
		done, rd.pending, rd.pendingErr = rd.pending, nil, false
	}
	if !continuing {
		o := &Order{OrderNo: no}
		if reason, col := rd.orderFields(o); reason != "" {
			rd.reject(line, col, reason)
			rd.pendingErr = true
			// The order's further rows (Shopify's lines) are rejected with it.
			rd.pending = &Order{OrderNo: no}
			return done
		}
		rd.pending = o
	} else if rd.pendingErr {
		rd.reject(line, rd.names[FOrderNo], "the order's first row was rejected")
		return done
	}
	l, reason, col := rd.lineFields()
	if reason != "" {
		rd.reject(line, col, reason)
		if !continuing {
			rd.pending, rd.pendingErr = &Order{OrderNo: no}, true
		}
		return done
	}
	rd.pending.Lines = append(rd.pending.Lines, l)
	rd.pending.Rows++
	return done
}

// Pending orders whose every row was rejected are dropped by the caller (no lines).

func (rd *Reader) reject(line int64, col, reason string) {
	rd.errs = append(rd.errs, RowError{Line: line, Column: col, Reason: reason})
}

func (rd *Reader) columnName(i int) string {
	for f, j := range rd.idx {
		if j == i {
			return rd.names[f]
		}
	}
	return fmt.Sprintf("column %d", i+1)
}

// orderFields reads the order's own fields from the current row; a reason and the column
// when the row cannot be taken.
func (rd *Reader) orderFields(o *Order) (string, string) {
	r, f := &rd.r, rd.format
	status, why := f.status(r)
	if status == "" {
		col := rd.names[FStatus]
		if f.Name == "shopify" {
			col = rd.names[FFinancialStatus]
		}
		return fmt.Sprintf("unknown status %q: %s", clip(r.statusText(f), 60), why), col
	}
	var err error
	if o.OrderedAt, err = rd.time(FOrderedAt, true); err != nil {
		return err.Error(), rd.names[FOrderedAt]
	}
	times := []struct {
		f   Field
		dst **time.Time
	}{{FPaidAt, &o.PaidAt}, {FShippedAt, &o.ShippedAt}, {FCompletedAt, &o.CompletedAt}}
	for _, t := range times {
		v, err := rd.time(t.f, false)
		if err != nil {
			return err.Error(), rd.names[t.f]
		}
		if !v.IsZero() {
			*t.dst = &v
		}
	}
	money := []struct {
		f   Field
		dst *int64
	}{{FPaid, &o.Paid}, {FTotal, &o.Total}, {FDiscount, &o.Discount}, {FRefund, &o.Refund}}
	for _, m := range money {
		v, err := parseMoney(r.get(m.f))
		if err != nil {
			return err.Error(), rd.names[m.f]
		}
		if v < 0 {
			return "negative amount", rd.names[m.f]
		}
		*m.dst = v
	}
	if o.Total == 0 {
		o.Total = o.Paid + o.Discount
	}
	if o.Refund > 0 && o.Paid > 0 && o.Refund >= o.Paid && status != "pending" {
		status = "refunded" // refunded in full
	}
	if status == "cancelled" && o.Refund > 0 {
		status = "refunded" // closed after payment: the money went back
	}
	o.Status = status
	o.Buyer = clip(clean(r.get(FBuyer)), 256)
	o.Shop = clip(clean(r.get(FShop)), 128)
	return "", ""
}

// lineFields reads the row's order line.
func (rd *Reader) lineFields() (Line, string, string) {
	r := &rd.r
	var l Line
	l.SKU = clip(clean(r.get(FSKU)), 128)
	l.GoodsName = clip(clean(r.get(FGoodsName)), 128)
	qs := clean(r.get(FQuantity))
	if qs == "" {
		qs = "1"
	}
	q, err := strconv.ParseInt(qs, 10, 64)
	if err != nil {
		fq, ferr := strconv.ParseFloat(qs, 64)
		if ferr != nil || fq != math.Trunc(fq) || math.Abs(fq) > 1e12 {
			return l, fmt.Sprintf("quantity %q is not a whole number", clip(qs, 40)), rd.names[FQuantity]
		}
		q = int64(fq)
	}
	if q < 0 {
		return l, fmt.Sprintf("negative quantity %d", q), rd.names[FQuantity]
	}
	if q > 1_000_000_000 {
		return l, "quantity above 1,000,000,000", rd.names[FQuantity]
	}
	l.Quantity = q
	p, err := parseMoney(r.get(FUnitPrice))
	if err != nil {
		return l, err.Error(), rd.names[FUnitPrice]
	}
	if p < 0 {
		return l, "negative unit price", rd.names[FUnitPrice]
	}
	l.UnitPrice = p
	l.Amount = p * q
	if rd.r.idx[FUnitPrice] < 0 && rd.pending != nil && len(rd.pending.Lines) == 0 {
		// One line per order (Taobao, Pinduoduo): the line is the order's paid amount.
		l.Amount = rd.pending.Paid
		if q > 0 {
			l.UnitPrice = l.Amount / q
		}
	}
	return l, "", ""
}

// time parses a time column; zero when empty and not required.
func (rd *Reader) time(f Field, required bool) (time.Time, error) {
	v := clean(rd.r.get(f))
	if v == "" || v == "-" || v == "0000-00-00 00:00:00" {
		if required {
			return time.Time{}, errors.New("missing time")
		}
		return time.Time{}, nil
	}
	if rd.layout != "" {
		// The file's times share a layout: the one that read the last time first.
		if t, err := time.ParseInLocation(rd.layout, v, rd.format.Zone); err == nil && t.Year() >= 1990 && t.Year() <= 2200 {
			return t.UTC().Truncate(time.Second), nil
		}
	}
	t, layout, err := parseTime(v, rd.format.Zone, rd.encoding == "xlsx")
	rd.layout = layout
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Second), nil
}

var timeLayouts = []string{
	"2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05 -07:00", time.RFC3339, "2006-01-02T15:04:05",
	"2006-01-02 15:04:05", "2006/01/02 15:04:05", "2006/1/2 15:04:05", "2006-1-2 15:04:05",
	"2006-01-02 15:04", "2006/01/02 15:04", "2006/1/2 15:04", "2006-01-02", "2006/01/02", "2006/1/2",
}

func parseTime(v string, zone *time.Location, excel bool) (time.Time, string, error) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, v, zone); err == nil {
			if t.Year() < 1990 || t.Year() > 2200 {
				return time.Time{}, "", fmt.Errorf("time %q out of range (1990 to 2200)", clip(v, 40))
			}
			return t, l, nil
		}
	}
	if excel {
		// A date cell of a spreadsheet: days since 1899-12-30.
		if d, err := strconv.ParseFloat(v, 64); err == nil && d > 32874 && d < 110000 {
			days := math.Floor(d)
			secs := math.Round((d - days) * 86400)
			base := time.Date(1899, 12, 30, 0, 0, 0, 0, zone)
			return base.AddDate(0, 0, int(days)).Add(time.Duration(secs) * time.Second), "", nil
		}
	}
	return time.Time{}, "", fmt.Errorf("wrong date %q (want YYYY-MM-DD hh:mm:ss, optionally with an offset)", clip(v, 40))
}

// parseMoney reads an amount in cents: "1,234.50", "¥128", "$12.00", "CNY 5", "" (0).
func parseMoney(v string) (int64, error) {
	s := clean(v)
	if s == "" || s == "-" {
		return 0, nil
	}
	orig := s
	if strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' }) >= 0 {
		s = moneyNoise.Replace(s)
	}
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("amount %q is not a number", clip(orig, 40))
	}
	if len(frac) > 2 {
		// more than cents: round half up on the third digit
		for _, c := range frac[2:] {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("amount %q is not a number", clip(orig, 40))
			}
		}
		up := frac[2] >= '5'
		frac = frac[:2]
		if up {
			c, err := parseMoney(whole + "." + frac)
			if err != nil {
				return 0, fmt.Errorf("amount %q is not a number", clip(orig, 40))
			}
			c++
			if neg {
				c = -c
			}
			return c, nil
		}
	}
	for len(frac) < 2 {
		frac += "0"
	}
	if whole == "" {
		whole = "0"
	}
	if len(whole) > 13 {
		return 0, fmt.Errorf("amount %q above 9,999,999,999,999.99", clip(orig, 40))
	}
	w, err1 := strconv.ParseUint(whole, 10, 64)
	fr, err2 := strconv.ParseUint(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("amount %q is not a number", clip(orig, 40))
	}
	c := int64(w*100 + fr)
	if neg {
		c = -c
	}
	return c, nil
}

var moneyNoise = strings.NewReplacer(",", "", "¥", "", "￥", "", "$", "", "元", "", "RMB", "", "CNY", "", "USD", "", " ", "")

// clean trims spaces and the tab or apostrophe exports put before long numbers (order
// numbers) so spreadsheets keep them as text.
func clean(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "'")
	s = strings.TrimPrefix(s, "\t")
	if len(s) > 2 && s[0] == '=' && s[1] == '"' && s[len(s)-1] == '"' {
		// ="123456789012" is how some exports keep a long number as text.
		s = s[2 : len(s)-1]
	}
	return strings.TrimSpace(s)
}

// row reads fields of the current record.
type row struct {
	rec  []string
	idx  *[numFields]int
	line int64
}

func (r *row) get(f Field) string {
	i := r.idx[f]
	if i < 0 || i >= len(r.rec) {
		return ""
	}
	return r.rec[i]
}

func (r *row) statusText(f *Format) string {
	if f.Name == "shopify" {
		return r.get(FFinancialStatus)
	}
	return r.get(FStatus)
}

// csvSource reads CSV rows with their line numbers.
type csvSource struct {
	r *csv.Reader
}

func newCSV(r io.Reader, head []byte) *csvSource {
	c := csv.NewReader(r)
	c.FieldsPerRecord = -1
	c.ReuseRecord = true
	c.LazyQuotes = true
	// Some exports use tabs (Excel's "Unicode text").
	if firstLine := head[:max(0, bytes.IndexByte(head, '\n'))]; bytes.Count(firstLine, []byte("\t")) > bytes.Count(firstLine, []byte(",")) {
		c.Comma = '\t'
	}
	return &csvSource{r: c}
}

func (s *csvSource) next() ([]string, int64, error) {
	rec, err := s.r.Read()
	line, _ := s.r.FieldPos(0)
	return rec, int64(line), err
}
