// Package testing groups what the tests share and nothing ships: starting
// real Redis, S3 and Chromium on free ports (testsupport, harness), reading
// PDFs with Poppler and qpdf (pdfcheck), and the reliability suite (chaos).
package testing
