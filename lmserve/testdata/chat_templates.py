# chat_templates.py writes chat_templates.json: chat templates as models ship them, each rendered
# by jinja2 the way transformers' apply_chat_template renders it (a sandboxed environment with
# trim_blocks and lstrip_blocks, raise_exception, add_generation_prompt), as the Go renderer's
# reference. Run: python3 chat_templates.py > chat_templates.json
import json
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATES = {
    "llama2": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    "llama3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    "chatml": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    "zephyr": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    "mixed": "{%- set ns = namespace(sys='') -%}\n{%- for m in messages -%}\n  {%- if m.role == 'system' -%}{%- set ns.sys = m.content | trim -%}{%- endif -%}\n{%- endfor -%}\n{{- bos_token -}}\n{%- for m in messages if m.role != 'system' -%}\n  {%- if m.role == 'user' -%}\n    [INST] {{ (ns.sys ~ '\\n\\n' if loop.first and ns.sys else '') ~ m.content }} [/INST]\n  {%- else -%}\n    {{ ' ' ~ m.content ~ eos_token }}\n  {%- endif -%}\n{%- endfor %}\n  {# a comment #}\n{{ messages | length }} {{ tools is defined }} {{ 'x' in 'xyz' }} {{ [1,2,3][-1] }} {{ 7 // 2 }} {{ -7 % 3 }} {{ messages[-1]['content'][:3] | upper }} {{ messages[0].get('name', 'anon') }} {{ 'a,b'.split(',') | join('+') }} {{ none is none }} {{ 2 * 3 + 1 }}",
}

CONVERSATIONS = {
    "with system": [
        {"role": "system", "content": " Be brief. "},
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Say a word."},
    ],
    "user only": [{"role": "user", "content": "One question"}],
    "not alternating": [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ],
}


def raise_exception(msg):
    raise TemplateError(msg)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = raise_exception
cases = []
for tname, src in TEMPLATES.items():
    t = env.from_string(src)
    for cname, msgs in CONVERSATIONS.items():
        case = {"template": tname, "conversation": cname, "source": src, "messages": msgs}
        try:
            case["want"] = t.render(messages=msgs, bos_token="<s>", eos_token="</s>", add_generation_prompt=True)
        except TemplateError as e:
            case["error"] = str(e)
        cases.append(case)
print(json.dumps(cases, indent=1))
