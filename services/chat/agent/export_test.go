package agent

// FormatNumber exports formatNumber to the external tests.
var FormatNumber = formatNumber
