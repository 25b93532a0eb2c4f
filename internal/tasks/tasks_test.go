package tasks_test

import (
	"encoding/json"
	"testing"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// TestConstructors: each constructor names its task type and carries its
// payload as the JSON its handler decodes.
func TestConstructors(t *testing.T) {
	chapter := spec.ChapterTask{V: 1, ManualTask: "m-1", Index: 2, ManualID: "m", Version: "1", Chapter: spec.Chapter{HTML: "<p>x</p>"}}
	chapterTask, err := tasks.NewChapterTask(chapter)
	if err != nil {
		t.Fatal(err)
	}
	callback := tasks.Callback{URL: "https://hooks.example.com/pdf", Delivery: "callback-t", Body: []byte(`{"state":"completed"}`)}
	callbackTask, err := tasks.NewCallbackTask(callback)
	if err != nil {
		t.Fatal(err)
	}
	chapterJSON, _ := json.Marshal(chapter)
	callbackJSON, _ := json.Marshal(callback)
	for _, tc := range []struct {
		name, gotType, wantType string
		got, want               []byte
	}{
		{"export", tasks.NewExportTask([]byte(`{"v":1}`)).Type(), tasks.TypeExport, tasks.NewExportTask([]byte(`{"v":1}`)).Payload(), []byte(`{"v":1}`)},
		{"chapter", chapterTask.Type(), tasks.TypeChapter, chapterTask.Payload(), chapterJSON},
		{"callback", callbackTask.Type(), tasks.TypeCallback, callbackTask.Payload(), callbackJSON},
	} {
		if tc.gotType != tc.wantType || string(tc.got) != string(tc.want) {
			t.Errorf("%s: task %s %s, want %s %s", tc.name, tc.gotType, tc.got, tc.wantType, tc.want)
		}
	}
	if c, err := spec.DecodeChapterTask(chapterTask.Payload()); err != nil || c.ManualTask != "m-1" || c.Index != 2 {
		t.Errorf("DecodeChapterTask(NewChapterTask) = %+v, %v", c, err)
	}
}

// TestDecodeCallback: the payload round-trips; one without a URL or a
// delivery id, or not JSON, is malformed.
func TestDecodeCallback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		ok      bool
	}{
		{"complete", `{"url":"https://h.example/x","delivery":"callback-1","body":"e30=","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, true},
		{"no url", `{"delivery":"callback-1","body":"e30="}`, false},
		{"no delivery", `{"url":"https://h.example/x","body":"e30="}`, false},
		{"not json", `{`, false},
	} {
		c, err := tasks.DecodeCallback([]byte(tc.payload))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
		if tc.ok && (string(c.Body) != "{}" || c.Traceparent == "") {
			t.Errorf("%s: decoded %+v", tc.name, c)
		}
	}
}
