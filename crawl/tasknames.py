"""What a host session's Celery task is called where operators look (task events, Flower):
fetch.host_session[https://example.org] rather than a bare fetch.host_session and an id.

The dispatcher sends each session with Celery's `shadow` option set to that name: the
worker still runs fetch.host_session (the message's `task` header), while its request,
log lines and task events carry the shadow (celery/worker/request.py). One event escapes:
Celery builds the dispatcher's task-sent event with the real name (celery/app/amqp.py,
as_task_v2), and Flower keeps the name of whichever event it merged last (the sent event
can arrive after the worker's received event: they travel from two processes), so some
sessions would show the bare name. The AMQP class below gives that event the shadow too;
crawlerweb/celery.py installs it. No Django here: Celery loads it before Django is set up.
"""

from celery.app import amqp

SESSION_TASK = "fetch.host_session"


def session_task_name(origin: str) -> str:
    return f"{SESSION_TASK}[{origin}]"


class AMQP(amqp.AMQP):
    """Celery's message factory, with the task-sent event named by the shadow when there is one."""

    def as_task_v2(self, *args, **kwargs):
        message = super().as_task_v2(*args, **kwargs)
        shadow = message.headers.get("shadow")
        if shadow and message.sent_event:
            message.sent_event["name"] = shadow
        return message
