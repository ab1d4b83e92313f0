package imports

import (
	"errors"
	"io"

	"github.com/xuri/excelize/v2"
)

// MaxXLSXBytes bounds an .xlsx file: a zip archive is read through its directory at the end,
// so excelize holds the (compressed) file in memory; the sheet itself is streamed row by row
// (Rows), its XML spilling to a temporary file above excelize's UnzipXMLSizeLimit. Excel's
// own limit is 1,048,576 rows a sheet; exports larger than this go as CSV.
const MaxXLSXBytes = 64 << 20

// xlsxSource reads the first sheet of a workbook, cells as stored (numbers and dates as
// their raw values: a date is a serial day number, parseTime reads it), never evaluating
// a formula (a formula cell is read as its cached value).
type xlsxSource struct {
	f    *excelize.File
	rows *excelize.Rows
	line int64
}

func newXLSX(r io.Reader) (*xlsxSource, error) {
	lr := &io.LimitedReader{R: r, N: MaxXLSXBytes + 1}
	f, err := excelize.OpenReader(lr, excelize.Options{RawCellValue: true})
	if lr.N <= 0 {
		return nil, &FileError{Message: "the .xlsx file is larger than 64 MiB; export it as CSV"}
	}
	if err != nil {
		return nil, fileErr("not a readable .xlsx file: %v", err)
	}
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		return nil, fileErr("the .xlsx file has no sheet")
	}
	rows, err := f.Rows(sheets[0])
	if err != nil {
		return nil, fileErr("the .xlsx file's first sheet cannot be read: %v", err)
	}
	return &xlsxSource{f: f, rows: rows}, nil
}

func (s *xlsxSource) next() ([]string, int64, error) {
	if !s.rows.Next() {
		err := s.rows.Error()
		_ = s.rows.Close()
		_ = s.f.Close()
		if err != nil {
			return nil, s.line, errors.Join(errors.New("xlsx"), err)
		}
		return nil, s.line, io.EOF
	}
	s.line++
	cols, err := s.rows.Columns(excelize.Options{RawCellValue: true})
	return cols, s.line, err
}
