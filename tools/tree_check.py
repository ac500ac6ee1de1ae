"""The command line the tree checks share (tools/check_docs.py, tools/check_includes.py):
--root DIR checks a tree (default: this repository), --self-test plants mistakes in a scratch
tree and expects each reported. Exit 0 when clean, 1 with one line per problem."""
import argparse
import os


def run(description, check, self_test, failed, passed):
    """check(root) -> problems; failed(problems) and passed(root) -> the closing line."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    print(failed(problems) if problems else passed(args.root))
    return 1 if problems else 0
