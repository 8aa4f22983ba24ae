"""How the docs checks end: each problem on a line, a summary, and the exit status."""


def finish(problems, summary):
    for p in problems:
        print(p)
    print(summary)
    return 1 if problems else 0
