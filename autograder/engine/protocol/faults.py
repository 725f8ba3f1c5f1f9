"""What can go wrong on the student's side of the boundary, as typed exceptions.

Every one is the *student's* outcome (a failed check with a Chinese explanation),
never a grader error: the child raised, was too slow, died, or sent something that is
not data. A check that lets one escape still fails the student's cell with its message.
"""

from __future__ import annotations

__all__ = ["StudentFault", "Raised", "Interrupted", "ChildGone", "BadValue", "Missing"]


class StudentFault(Exception):
    """Base class; ``str(err)`` is a Chinese sentence for the feedback."""


class Raised(StudentFault):
    """The student's function raised ``type_name`` (``bases``: its class hierarchy)."""

    def __init__(self, type_name: str, message: str, bases: tuple[str, ...] = ()) -> None:
        self.type_name, self.message, self.bases = type_name, message, bases or (type_name,)
        super().__init__(f"运行出错：{type_name}: {message}")

    def is_a(self, name: str) -> bool:
        return name in self.bases


class Interrupted(StudentFault):
    """The student's code ran past its time and was interrupted (the child lives on)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"运行超过 {seconds:g} 秒被中断。是否有死循环，或对很大的输入做了逐元素的"
                         " Python 循环？")


class ChildGone(StudentFault):
    """The child is dead (exited, crashed, killed after a time-out or for misbehaving)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class BadValue(StudentFault):
    """The child answered with something that is not data the grader accepts."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"返回的值无法读取（{detail}）。请返回数组、数、布尔值、字符串、列表或 SymPy 对象。")


class Missing(StudentFault):
    """A variable the hidden test needs is not defined in the student's namespace."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"变量或函数 {name} 还没有定义：请先完成并运行定义它的单元格。")
