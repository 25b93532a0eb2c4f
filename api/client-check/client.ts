// A TypeScript client of the HTTP API, typed from api/openapi.yaml by
// openapi-typescript (schema.ts, generated at test time) and openapi-fetch:
// internal/api's TestOpenAPI_TypeScriptClientCompiles generates the types
// and compiles this file with tsc, so a spec a generated client cannot use
// fails make test. It is what a team generating its client writes.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type ExportRequest = paths["/v1/exports"]["post"]["requestBody"]["content"]["application/json"];
type Status = components["schemas"]["Status"];
type Final = components["schemas"]["Final"];

const api = createClient<paths>({
  baseUrl: "http://127.0.0.1:8080",
  headers: { Authorization: "Bearer API_TOKEN" },
});

// Enqueue with only what a caller must send: options, margins and cookies
// are given in part; every field with a default may be left out.
export async function enqueue(): Promise<string> {
  const body: ExportRequest = {
    v: 1,
    manual_id: "ops-guide",
    version: "2026.11.3",
    source: {
      url: "https://docs.example.com/ops-guide/2026.11.3/print",
      headers: { Authorization: "Bearer docs-token" },
      cookies: [{ name: "sid", value: "abc" }],
    },
    options: {
      paper: "A4",
      margin_mm: { top: 20 },
      outline: true,
      metadata: { title: "Ops guide", keywords: ["ops"], language: "en-GB" },
      watermark: { text: "DRAFT" },
      encryption: { owner_password: "owner-secret", allow: ["print"] },
    },
    callback: { url: "https://api.example.com/hooks/pdf" },
  };
  const { data, error, response } = await api.POST("/v1/exports", {
    params: { query: { queue: "critical" } },
    body,
  });
  if (error) {
    throw new Error(`${response.status} ${error.field ?? ""}: ${error.error}`);
  }
  return data.task_id;
}

// A whole manual from its chapters, with a table of contents; the result
// counts the chapters printed and reused.
export async function enqueueManual(): Promise<number | undefined> {
  const body: ExportRequest = {
    v: 1,
    manual_id: "py-tutorial",
    version: "3.13",
    source: {
      chapters: [
        { url: "https://docs.example.com/py/3.13/tutorial/appetite.html", title: "Whetting Your Appetite", revision: "r7" },
        { html: "<h1>Errata</h1>" },
      ],
    },
    options: { outline: true, toc: true },
  };
  const { data, error } = await api.POST("/v1/exports", { body });
  if (error) throw new Error(error.error);
  const status = await waitFor(data.task_id);
  return status.result?.chapters?.reused;
}

// Long-poll: the answer comes as soon as the export is final, or after 30 s.
export async function waitFor(id: string): Promise<Status> {
  for (;;) {
    const { data, error } = await api.GET("/v1/exports/{id}", {
      params: { path: { id }, query: { wait: "30s" } },
    });
    if (error) throw new Error(error.error);
    if (data.state === "completed" || data.state === "failed" || data.state === "canceled") {
      return data;
    }
  }
}

// Download the PDF of a completed export (streamed, not redirected).
export async function download(id: string): Promise<Blob> {
  const { data, error } = await api.GET("/v1/exports/{id}/pdf", {
    params: { path: { id }, query: { redirect: false } },
    parseAs: "blob",
  });
  if (error || !data) throw new Error("not downloadable");
  return data;
}

// Cancel: 200 when final now, 202 while a running render stops, 409 when
// it was final already.
export async function cancel(id: string): Promise<Status["state"]> {
  const { data, error } = await api.DELETE("/v1/exports/{id}", { params: { path: { id } } });
  if (error) throw new Error("error" in error ? error.error : String(error));
  return data.state;
}

export async function run(): Promise<void> {
  const id = await enqueue();
  const st = await waitFor(id);
  if (st.state === "completed" && st.result) {
    const pages: number | undefined = st.result.pages;
    const pdf = await download(id);
    console.log(st.result.artifact_key, pages, pdf.size);
  } else {
    console.log(await cancel(id));
  }
}

// A callback receiver's view of the body (verify webhook-signature first).
export function onCallback(final: Final): string {
  return final.state === "completed" ? (final.result?.download_url ?? "") : (final.error ?? "");
}

// Envelope-only fields are not part of a request: naming one does not
// compile (and the API answers 400 naming it).
export const refused: ExportRequest = {
  v: 1,
  manual_id: "ops-guide",
  version: "2026.11.3",
  source: {
    url: "https://docs.example.com/print",
    // @ts-expect-error source.credentials_ref is envelope-only
    credentials_ref: { id: "another-export", identity: "x", header_names: [], cookie_names: [] },
  },
};

// The passwords' reference is envelope-only too.
export const refusedRef: ExportRequest = {
  v: 1,
  manual_id: "ops-guide",
  version: "2026.11.3",
  source: { url: "https://docs.example.com/print" },
  // @ts-expect-error encryption_ref is envelope-only
  encryption_ref: { id: "another-export", identity: "x" },
};

// So is the client an export belongs to: the API records the caller's.
export const refusedClient: ExportRequest = {
  v: 1,
  manual_id: "ops-guide",
  version: "2026.11.3",
  source: { url: "https://docs.example.com/print" },
  // @ts-expect-error client is envelope-only
  client: "another-client",
};
