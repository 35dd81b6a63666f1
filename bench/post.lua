-- wrk -s bench/post.lua <base>/api/v1/chat/completions: one small chat completion per request, with the
-- API key in TOLLGATE_KEY (docs/performance.md, "Profiling").
local key = os.getenv("TOLLGATE_KEY")
assert(key and key ~= "", "set TOLLGATE_KEY to an API key (bin/tollgate demo prints one)")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key
wrk.body = '{"model":"prov-deepseek","messages":[{"role":"user","content":"hi"}],"max_tokens":16}'
