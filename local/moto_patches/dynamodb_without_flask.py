"""DynamoDB and DynamoDB Streams requests go to moto's handler without Flask around it.

Upstream (`DomainDispatcherApplication` and `convert_to_flask_response`): every request finds its
service's Flask app, which builds its request and application contexts, routes the URL, runs
flask-cors and wraps the handler's answer in a Flask response. For a GetItem that was 57% of the
emulator's time inside the application (cProfile, 2026-11-28); moto's own handler, the same
`dispatch` Flask would call, did the rest. This layer hands a request whose `X-Amz-Target`
names either service (both answer on `/`, as their url_paths say) to that `dispatch` with moto's
own request class, as a WSGI server's (`from_wsgi_server`), and answers what it returns as
`convert_to_flask_response` and flask-cors would: the same status, headers and body. Anything
else goes on to moto's dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def dynamodb_without_flask(
    application: Callable[..., Iterable[bytes]],
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    from botocore.exceptions import ClientError
    from moto.core.request import Request
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.moto_api import recorder
    from werkzeug.exceptions import HTTPException
    from werkzeug.wrappers import Response

    class ServerRequest(Request):
        from_wsgi_server = True

    handlers = {"DynamoDB_20120810": DynamoHandler, "DynamoDBStreams_20120810": DynamoDBStreamsHandler}

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        service = environ.get("HTTP_X_AMZ_TARGET", "").partition(".")[0]
        handler = handlers.get(service)
        if handler is None or environ.get("PATH_INFO", "/") != "/":
            return application(environ, start_response)
        request = ServerRequest(environ)
        try:
            recorder._record_request(request)
            result = handler.dispatch(request, request.raw_url, dict(request.headers))
        except ClientError as error:  # as convert_to_flask_response answers it
            result = 400, {}, error.response["Error"]["Message"]
        except HTTPException as error:  # as Flask answers it
            return error(environ, start_response)
        status, headers, content = result if len(result) == 3 else (200, {}, result)
        response = Response(response=content, status=status, headers=headers)
        response.headers.setdefault("Access-Control-Allow-Origin", "*")  # what flask-cors adds to every answer
        return response(environ, start_response)

    return serve
