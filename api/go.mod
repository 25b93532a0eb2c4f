module github.com/pdfexport/pdfexport/api

go 1.26.0

require (
	github.com/getkin/kin-openapi v0.153.0
	github.com/pdfexport/pdfexport v0.0.0-00010101000000-000000000000
)

require (
	github.com/go-openapi/jsonpointer v1.0.0 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/hibiken/asynq => ../third_party/asynq
	github.com/pdfexport/pdfexport => ../
)
