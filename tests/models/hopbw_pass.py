"""A planted Inductor bug (tests/test_e2e_hopbw.py): a post-grad pass that raises on a backward graph
calling while_loop, as torch 2.11's Inductor raised on the backward while_loop pytorch/pytorch#183017
built from an expanded incoming gradient (fixed by #183658)."""


def reject_while_loop_backward(graph):
    tangents = any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes)
    loops = [n for n in graph.nodes if n.op == "call_function" and "while_loop" in str(n.target)]
    if tangents and loops:
        raise RuntimeError(f"planted: backward graph calls while_loop ({loops[0].name})")
