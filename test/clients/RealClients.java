import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URI;
import java.net.URL;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Java client stacks against the sidecar (test/e2e/real-clients.test.ts launches this file with
 * `java RealClients.java`). Each case first asks the test's control server to revoke every token
 * on the service, then sends one request through the sidecar and prints one JSON line: case,
 * HTTP status, the body size the service's echo reports, and the protocol version Java used.
 * SIDECAR and CONTROL are base URLs (plain HTTP).
 */
public class RealClients {
  interface Case { String[] run(String url) throws Exception; }

  static final String SIDECAR = System.getenv("SIDECAR");
  static final String CONTROL = System.getenv("CONTROL");
  static final byte[] BODY = ("a=1&b=2&text=" + "x".repeat(4000)).getBytes(StandardCharsets.US_ASCII);
  // java.net.http.HttpClient's default version is HTTP_2: on http:// it offers `Upgrade: h2c`.
  static final HttpClient CLIENT = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).connectTimeout(Duration.ofSeconds(20)).build();

  public static void main(String[] args) {
    Map<String, Case> cases = new LinkedHashMap<>();
    cases.put("HttpURLConnection GET", (url) -> urlConnection(url, "GET", false, false));
    cases.put("HttpURLConnection POST fixed length", (url) -> urlConnection(url, "POST", true, false));
    cases.put("HttpURLConnection POST setChunkedStreamingMode (chunked)", (url) -> urlConnection(url, "POST", true, true));
    cases.put("HttpClient GET (h2c offer)", (url) -> httpClient(url, HttpRequest.newBuilder(URI.create(url)).GET()));
    cases.put("HttpClient POST ofByteArray (h2c offer)", (url) -> httpClient(url, HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofByteArray(BODY))));
    cases.put("HttpClient POST ofInputStream (chunked)", (url) -> httpClient(url, HttpRequest.newBuilder(URI.create(url))
        .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(BODY)))));
    for (Map.Entry<String, Case> c : cases.entrySet()) {
      try {
        revoke();
        String[] r = c.getValue().run(SIDECAR + "/pub/b2b/v1/echo/" + URLEncoder.encode(c.getKey(), StandardCharsets.UTF_8).replace("+", "%20"));
        System.out.println("{\"case\":\"" + c.getKey() + "\",\"status\":" + r[0] + ",\"bodyBytes\":" + bodyBytes(r[1]) + ",\"version\":\"" + r[2] + "\"}");
      } catch (Exception e) {
        System.out.println("{\"case\":\"" + c.getKey() + "\",\"error\":\"" + e.toString().replace("\\", "/").replace("\"", "'") + "\"}");
      }
      System.out.flush();
    }
    System.exit(0);
  }

  static void revoke() throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(CONTROL + "/revoke").openConnection(Proxy.NO_PROXY);
    c.setRequestMethod("POST");
    c.getResponseCode();
    c.getInputStream().readAllBytes();
  }

  static String[] urlConnection(String url, String method, boolean body, boolean chunked) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection(Proxy.NO_PROXY);
    c.setRequestMethod(method);
    c.setConnectTimeout(20_000);
    c.setReadTimeout(20_000);
    if (body) {
      c.setDoOutput(true);
      if (chunked) c.setChunkedStreamingMode(1024);
      else c.setFixedLengthStreamingMode(BODY.length);
      try (OutputStream out = c.getOutputStream()) {
        out.write(BODY);
      }
    }
    int status = c.getResponseCode();
    InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
    String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    return new String[] { String.valueOf(status), text, "HTTP/1.1" };
  }

  static String[] httpClient(String url, HttpRequest.Builder builder) throws Exception {
    HttpResponse<String> r = CLIENT.send(builder.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
    return new String[] { String.valueOf(r.statusCode()), r.body(), r.version().toString() };
  }

  static String bodyBytes(String echo) {
    Matcher m = Pattern.compile("\"bodyBytes\":(\\d+)").matcher(echo);
    return m.find() ? m.group(1) : "null";
  }
}
