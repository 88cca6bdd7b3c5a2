// openai_client.mjs PACKAGE_DIR BASE_URL: drives the server with OpenAI's own Node client, unchanged
// (npm's openai package, unpacked in PACKAGE_DIR), and prints one JSON line of what it saw.
import { pathToFileURL } from "node:url";

const [pkg, baseURL] = process.argv.slice(2);
const { default: OpenAI } = await import(pathToFileURL(pkg + "/index.mjs").href);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

const out = {};
const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const c = await client.completions.create({ model: out.models[0], prompt: "The quick brown fox", max_tokens: 6, temperature: 0 });
out.completion = { text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage };

const stream = await client.completions.create({ model: out.models[0], prompt: "The quick brown fox", max_tokens: 6, temperature: 0, stream: true });
let text = "", finish = null;
for await (const chunk of stream) {
	text += chunk.choices[0].text;
	finish = chunk.choices[0].finish_reason ?? finish;
}
out.stream = { text, finish };

const chat = await client.chat.completions.create({ model: out.models[0], messages: [{ role: "user", content: "Hello" }], max_tokens: 4, temperature: 0, stream: true });
let chatText = "", chatFinish = null;
for await (const chunk of chat) {
	chatText += chunk.choices[0].delta.content ?? "";
	chatFinish = chunk.choices[0].finish_reason ?? chatFinish;
}
out.chat = { text: chatText, finish: chatFinish };

try {
	await client.completions.create({ model: out.models[0], prompt: "x", max_tokens: -3 });
	out.error = "none";
} catch (e) {
	out.error = { status: e.status, param: e.param, type: e.type };
}
console.log(JSON.stringify(out));
