/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.pulsarfork.dropin;

import static org.awaitility.Awaitility.await;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.pulsar.client.api.PulsarClient;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;

/**
 * A Pulsar cluster of separate processes on loopback: one ZooKeeper, three bookies and two brokers, each broker from
 * a home of its own (upstream's jars or ours, see {@link StandaloneHomes}); ZooKeeper and the bookies run from the
 * first broker's home, whose managed-ledger they do not load. Ports are a fixed range from {@code cluster.port.base}
 * (checked free before the start), every process is stopped by its pid, and each keeps its log in the run's folder.
 * Topics are written with ensemble 3 and write and ack quorums of 2.
 */
final class Cluster implements AutoCloseable {
    static final String NAME = "cluster";
    private static final Duration START = Duration.ofSeconds(180);
    /** ZooKeeper, three bookies, then a broker and web port per broker: the range from cluster.port.base. */
    private static final int PORTS = 20;
    private static final int LOG_LINES = 30;
    private static final String LOG_CONFIG = Commands.REPO.resolve("standalone-home/conf/log4j2.xml").toString();
    private static final Pattern BROKER_URL = Pattern.compile("\"brokerUrl\"\\s*:\\s*\"pulsar://[^:]+:(\\d+)\"");
    private static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .build();
    private final Path dir;
    private final Path serverHome;
    private final int zkPort;
    private final List<Server> processes = new ArrayList<>();
    private final List<Broker> brokers = new ArrayList<>();

    /** One server process: its command, folder and log; started, killed, paused and resumed by its pid. */
    static class Server {
        final String name;
        final Path dir;
        private final List<String> command;
        private Process process;

        Server(String name, Path dir, List<String> command) {
            this.name = name;
            this.dir = dir;
            this.command = command;
        }

        void start() throws IOException {
            assertTrue(process == null || !process.isAlive(), name + " is running already");
            process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(name + ".log").toFile())).start();
            // A test JVM that ends without stopping it (a timeout, an interrupted build) must not leave it running.
            Process started = process;
            Runtime.getRuntime().addShutdownHook(new Thread(started::destroyForcibly, "kill-" + name));
        }

        boolean alive() {
            return process != null && process.isAlive();
        }

        /** SIGKILL: no shutdown hook, no cursor flush. */
        void kill9() throws Exception {
            if (alive()) {
                process.destroyForcibly();
                assertTrue(process.waitFor(60, TimeUnit.SECONDS), name + " did not die");
            }
        }

        /** SIGTERM, the shutdown an operator's service manager sends: the broker closes its topics. */
        void stop() throws Exception {
            if (alive()) {
                process.destroy();
                if (!process.waitFor(120, TimeUnit.SECONDS)) {
                    kill9();
                }
            }
        }

        void pause() throws Exception {
            signal("-STOP");
        }

        void resume() throws Exception {
            signal("-CONT");
        }

        private void signal(String signal) throws Exception {
            assertTrue(alive(), name + " is not running");
            Commands.run(dir, "kill", signal, String.valueOf(process.pid()));
        }

        String log() throws IOException {
            Path log = dir.resolve(name + ".log");
            return Files.isRegularFile(log) ? Files.readString(log) : "";
        }

        /** The last {@code lines} lines of its log, for a failure message. */
        String logTail(int lines) {
            try {
                List<String> all = log().lines().toList();
                return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
            } catch (IOException e) {
                return "(log not readable: " + e + ")";
            }
        }
    }

    /** A broker: its home (its jar set), ports and settings. */
    static final class Broker extends Server {
        final Path home;
        final int port;
        final int webPort;
        private String jars;

        Broker(String name, Path dir, List<String> command, Path home, String jars, int port, int webPort) {
            super(name, dir, command);
            this.home = home;
            this.jars = jars;
            this.port = port;
            this.webPort = webPort;
        }

        String serviceUrl() {
            return "pulsar://127.0.0.1:" + port;
        }

        String webServiceUrl() {
            return "http://127.0.0.1:" + webPort;
        }

        HttpResponse<String> send(String method, String path) throws Exception {
            return send(method, path, null);
        }

        /** A request of {@code method} with {@code json} as its body, or none when null. */
        HttpResponse<String> send(String method, String path, String json) throws Exception {
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(webServiceUrl() + path))
                    .timeout(Duration.ofSeconds(30));
            if (json == null) {
                request.method(method, HttpRequest.BodyPublishers.noBody());
            } else {
                request.header("Content-Type", "application/json")
                        .method(method, HttpRequest.BodyPublishers.ofString(json));
            }
            return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
        }

        String get(String path) throws Exception {
            HttpResponse<String> response = send("GET", path);
            assertEquals(response.statusCode(), 200, name + " GET " + path + ": " + response.body());
            return response.body();
        }

        /** Records that its home now has {@code jars} (an install or a rollback while it was stopped). */
        void installed(String jars) {
            assertTrue(!alive(), name + " is running");
            this.jars = jars;
        }

        @Override
        public String toString() {
            return name + " (" + jars + " jars, " + serviceUrl() + ")";
        }
    }

    /**
     * Lays out a cluster in {@code dir} with one broker per entry of {@code brokerHomes} ({jar set, home}), each
     * given {@code brokerSettings} (broker.conf lines) after the cluster's own; starts nothing.
     */
    Cluster(Path dir, List<String[]> brokerHomes, String brokerSettings) throws Exception {
        this.dir = Files.createDirectories(dir);
        int base = Integer.getInteger("cluster.port.base", 27600);
        outsideTheEphemeralRange(base, base + PORTS - 1);
        this.zkPort = free(base);
        this.serverHome = Path.of(brokerHomes.get(0)[1]);
        Path zk = Files.createDirectories(dir.resolve("zookeeper"));
        Files.writeString(zk.resolve("zoo.cfg"), String.join("\n", "tickTime=2000", "initLimit=10", "syncLimit=5",
                "dataDir=" + zk.resolve("data"), "clientPort=" + zkPort, "clientPortAddress=127.0.0.1",
                "admin.enableServer=false", ""));
        processes.add(new Server("zookeeper", zk, ServerJvm.command(serverHome, "-Xms64m -Xmx256m", LOG_CONFIG,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain", "zoo.cfg")));
        for (int i = 0; i < 3; i++) {
            Path bookie = Files.createDirectories(dir.resolve("bookie-" + i));
            Files.writeString(bookie.resolve("bookkeeper.conf"), String.join("\n", "bookiePort=" + free(base + 1 + i),
                    "advertisedAddress=127.0.0.1", "listeningInterface=lo", "allowLoopback=true",
                    "useHostNameAsBookieID=false", "journalDirectories=" + bookie.resolve("data/journal"),
                    "ledgerDirectories=" + bookie.resolve("data/ledgers"),
                    "metadataServiceUri=zk+null://127.0.0.1:" + zkPort + "/ledgers", "zkTimeout=30000",
                    "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                    "dbStorage_writeCacheMaxSizeMb=16", "dbStorage_readAheadCacheMaxSizeMb=16",
                    "dbStorage_rocksDB_blockCacheSize=16777216", "httpServerEnabled=false",
                    "autoRecoveryDaemonEnabled=false", "journalPreAllocSizeMB=1", "diskUsageThreshold=0.99",
                    "diskUsageWarnThreshold=0.98", ""));
            processes.add(new Server("bookie-" + i, bookie, ServerJvm.command(serverHome,
                    "-Xms64m -Xmx256m -XX:MaxDirectMemorySize=256m", LOG_CONFIG,
                    "org.apache.bookkeeper.server.Main", "--conf", "bookkeeper.conf")));
        }
        char id = 'a';
        for (String[] jarsAndHome : brokerHomes) {
            String name = "broker-" + id;
            int port = free(base + 10 + 2 * (id - 'a'));
            int webPort = free(base + 11 + 2 * (id - 'a'));
            Path broker = Files.createDirectories(dir.resolve(name));
            Files.writeString(broker.resolve("broker.conf"), String.join("\n", "clusterName=" + NAME,
                    "metadataStoreUrl=zk:127.0.0.1:" + zkPort, "configurationMetadataStoreUrl=zk:127.0.0.1:" + zkPort,
                    "bindAddress=127.0.0.1", "advertisedAddress=127.0.0.1", "brokerServicePort=" + port,
                    "webServicePort=" + webPort, "managedLedgerDefaultEnsembleSize=3",
                    "managedLedgerDefaultWriteQuorum=2", "managedLedgerDefaultAckQuorum=2",
                    // Topics move only when a scenario moves them.
                    "loadBalancerSheddingEnabled=false", "loadBalancerAutoBundleSplitEnabled=false",
                    // A takeover after a kill or a pause comes one session timeout after it.
                    "metadataStoreSessionTimeoutMillis=10000", "zooKeeperSessionTimeoutMillis=10000",
                    "functionsWorkerEnabled=false", "bookkeeperClientHealthCheckEnabled=false",
                    brokerSettings, ""));
            Path home = Path.of(jarsAndHome[1]);
            brokers.add(new Broker(name, broker, ServerJvm.command(home,
                    "-Xms256m -Xmx768m -XX:MaxDirectMemorySize=512m", LOG_CONFIG,
                    "org.apache.pulsar.PulsarBrokerStarter", "--broker-conf", "broker.conf"),
                    home, jarsAndHome[0], port, webPort));
            id++;
        }
        processes.addAll(brokers);
    }

    /** ZooKeeper, the cluster's metadata, the bookies, then the brokers, each waited for. */
    void start() throws Exception {
        Server zk = processes.get(0);
        zk.start();
        awaitListening(zk, zkPort);
        Broker first = brokers.get(0);
        Server setup = new Server("initialize-cluster-metadata", dir, ServerJvm.command(serverHome, "-Xmx256m",
                LOG_CONFIG, "org.apache.pulsar.PulsarClusterMetadataSetup", "--cluster", NAME,
                "--metadata-store", "zk:127.0.0.1:" + zkPort,
                "--configuration-metadata-store", "zk:127.0.0.1:" + zkPort,
                "--web-service-url", first.webServiceUrl(), "--broker-service-url", first.serviceUrl()));
        setup.start();
        assertTrue(setup.process.waitFor(180, TimeUnit.SECONDS) && setup.process.exitValue() == 0,
                "initialize-cluster-metadata failed: " + setup.log());
        for (Server bookie : processes.subList(1, 4)) {
            bookie.start();
        }
        for (Server bookie : processes.subList(1, 4)) {
            awaitListening(bookie, bookiePort(bookie));
        }
        for (Broker broker : brokers) {
            startBroker(broker);
        }
    }

    /** Starts a stopped broker again and waits until it serves its admin API. */
    void startBroker(Broker broker) throws Exception {
        broker.start();
        awaitUp(broker, Duration.ofSeconds(1),
                () -> broker.send("GET", "/admin/v2/brokers/health").statusCode() == 200);
    }

    List<Broker> brokers() {
        return brokers;
    }

    Server bookie(int i) {
        return processes.get(1 + i);
    }

    /** The broker of the two that is not {@code broker}. */
    Broker other(Broker broker) {
        assertTrue(broker != null && brokers.size() == 2 && brokers.contains(broker), "not one of two: " + broker);
        return brokers.get(0).equals(broker) ? brokers.get(1) : brokers.get(0);
    }

    int bookiePort(Server bookie) throws IOException {
        return Integer.parseInt(setting(bookie, "bookkeeper.conf", "bookiePort"));
    }

    /** The cluster's service URL: every broker. */
    String serviceUrl() {
        return "pulsar://" + brokers.stream().map(b -> "127.0.0.1:" + b.port).collect(Collectors.joining(","));
    }

    /** The cluster's web service URL: every broker. */
    String webServiceUrl() {
        return "http://" + brokers.stream().map(b -> "127.0.0.1:" + b.webPort).collect(Collectors.joining(","));
    }

    /** A client that knows every broker, as an application given the cluster's service URL. */
    PulsarClient client() throws Exception {
        return PulsarClient.builder().serviceUrl(serviceUrl())
                .operationTimeout(30, TimeUnit.SECONDS).build();
    }

    /**
     * The broker that owns {@code topic} (public/default), asked of {@code via}; null when the answer names no
     * broker of this cluster (no owner yet).
     */
    Broker owner(Broker via, String topic) throws Exception {
        HttpResponse<String> lookup = via.send("GET", "/lookup/v2/topic/persistent/public/default/" + topic);
        Matcher url = BROKER_URL.matcher(lookup.body());
        if (lookup.statusCode() != 200 || !url.find()) {
            return null;
        }
        int port = Integer.parseInt(url.group(1));
        return brokers.stream().filter(b -> b.port == port).findFirst().orElse(null);
    }

    /** Waits until {@code expected}, asked, names itself the owner of {@code topic} and has loaded it. */
    void awaitOwner(Broker expected, String topic, Duration atMost) throws Exception {
        await().atMost(atMost).pollInterval(Duration.ofMillis(500)).ignoreExceptions().until(() ->
                expected.equals(owner(expected, topic))
                        && expected.send("GET", "/admin/v2/persistent/public/default/" + topic + "/internalStats")
                        .statusCode() == 200);
    }

    /**
     * Moves {@code topic}'s bundle to {@code destination} (an unload that names it) and waits until it owns and has
     * loaded the topic; false when the move was refused or did not happen in {@code atMost}. The destination is a
     * hint to the load manager: a bundle the unloading broker takes back at once is unloaded again, three times at
     * most within {@code atMost}.
     */
    boolean move(String topic, Broker destination, Duration atMost) throws Exception {
        Duration attempt = atMost.dividedBy(3);
        for (int i = 0; i < 3; i++) {
            Broker owner = owner(brokers.get(0), topic);
            String bundle = brokers.get(0).get("/lookup/v2/topic/persistent/public/default/" + topic + "/bundle")
                    .replace("\"", "").trim();
            HttpResponse<String> unload = (owner == null ? destination : owner).send("PUT",
                    "/admin/v2/namespaces/public/default/" + bundle + "/unload?destinationBroker=127.0.0.1:"
                            + destination.webPort);
            if (unload.statusCode() / 100 != 2) {
                return false;
            }
            try {
                awaitOwner(destination, topic, attempt);
                return true;
            } catch (ConditionTimeoutException e) {
                // Taken back by the broker it was unloaded from, or by no one yet: unloaded again.
            }
        }
        return false;
    }

    @Override
    public void close() throws Exception {
        for (int i = processes.size() - 1; i >= 0; i--) {
            Server server = processes.get(i);
            if (server.alive()) {
                // A paused process does not die of SIGKILL until it runs again on some kernels: resume first.
                Commands.exec(dir, "kill", "-CONT", String.valueOf(server.process.pid()));
                server.kill9();
            }
        }
    }

    private static String setting(Server server, String file, String key) throws IOException {
        return Files.readAllLines(server.dir.resolve(file)).stream().filter(l -> l.startsWith(key + "="))
                .map(l -> l.substring(key.length() + 1)).findFirst().orElseThrow();
    }

    private static void awaitListening(Server server, int port) {
        awaitUp(server, Duration.ofMillis(500), () -> {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                return true;
            }
        });
    }

    /**
     * Waits until {@code server} is {@code up}; fails at once when its process exits, and after {@link #START}
     * otherwise, each time with the end of its log in the message (CI shows the message, not the log).
     */
    private static void awaitUp(Server server, Duration poll, Callable<Boolean> up) {
        try {
            await().atMost(START).pollInterval(poll).ignoreExceptions()
                    .failFast(server.name + " exited", () -> !server.alive()).until(up);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError(server.name + (server.alive() ? " did not come up in " + START : " exited")
                    + "; the end of " + server.dir.resolve(server.name + ".log") + ":\n" + server.logTail(LOG_LINES),
                    e);
        }
    }

    /**
     * Fails when a port of the range is one the kernel may hand out to an outgoing connection: such a port can be
     * taken between the check that it is free and the bind of the server that listens on it.
     */
    private static void outsideTheEphemeralRange(int first, int last) throws IOException {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (!Files.isReadable(range)) {
            return;
        }
        // readAllLines, not readString: a /proc file reports size 0, and readString then returns its first byte.
        String[] bounds = Files.readAllLines(range).get(0).trim().split("\\s+");
        int low = Integer.parseInt(bounds[0]);
        int high = Integer.parseInt(bounds[1]);
        assertTrue(last < low || first > high, "the cluster's ports " + first + "-" + last + " (-Dcluster.port.base)"
                + " overlap the kernel's ephemeral ports " + low + "-" + high + " (" + range + ")");
    }

    /** {@code port}, when nothing listens there: the range is fixed, so a clash is an error, not a retry. */
    private static int free(int port) throws IOException {
        try (ServerSocket socket = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            return port;
        } catch (IOException e) {
            throw new IOException("port " + port + " of the cluster's range (-Dcluster.port.base) is taken", e);
        }
    }
}
