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

import static org.testng.Assert.assertTrue;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;

/**
 * The admin requests of geo-replication between two clusters that share no configuration store, sent to a
 * {@link Standalone} or to a {@link Cluster}'s broker alike, and the remote-side reading of what arrived.
 */
final class GeoAdmin {
    /** The cursor property our broker writes for a message the remote refused (broker: ReplicationRejections). */
    static final String REJECTION_RECORD = "pulsar.replication.rejected.";
    private static final Pattern BACKLOG = Pattern.compile("\"replicationBacklog\"\\s*:\\s*(\\d+)");

    /** A REST call of a cluster's admin API: a POST or PUT of {@code json} (no body when null). */
    @FunctionalInterface
    interface Rest {
        HttpResponse<String> send(String method, String path, String json) throws Exception;
    }

    private GeoAdmin() {
    }

    /**
     * Defines, through {@code admin} of one cluster, the other cluster ({@code otherName} at its URLs), the tenant of
     * {@code namespace} allowed on both, and {@code namespace} replicated to both, as an operator of two clusters
     * without a shared configuration store does on each.
     */
    static void replicate(Rest admin, String namespace, String selfName, String otherName, String otherWebUrl,
                          String otherBrokerUrl) throws Exception {
        expectOk(admin.send("PUT", "/admin/v2/clusters/" + otherName, "{\"serviceUrl\":\"" + otherWebUrl
                + "\",\"brokerServiceUrl\":\"" + otherBrokerUrl + "\"}"));
        String clusters = "[\"" + selfName + "\",\"" + otherName + "\"]";
        expectOk(admin.send("PUT", "/admin/v2/tenants/" + namespace.substring(0, namespace.indexOf('/')),
                "{\"adminRoles\":[],\"allowedClusters\":" + clusters + "}"));
        expectOk(admin.send("PUT", "/admin/v2/namespaces/" + namespace, null));
        expectOk(admin.send("POST", "/admin/v2/namespaces/" + namespace + "/replication", clusters));
    }

    /** The source topic's replication backlog (admin path {@code topicPath}), -1 when its stats show none. */
    static long replicationBacklog(Rest admin, String topicPath) throws Exception {
        Matcher backlog = BACKLOG.matcher(admin.send("GET", topicPath + "/stats", null).body());
        return backlog.find() ? Long.parseLong(backlog.group(1)) : -1;
    }

    static void expectOk(HttpResponse<String> response) {
        assertTrue(response.statusCode() / 100 == 2, response.statusCode() + " " + response.uri() + ": "
                + response.body());
    }

    /** Receives what is there, a message "E3:..." (the one the remote refuses by size) as "E3", and acks it. */
    static void receiveAvailable(Consumer<String> consumer, List<String> received) throws Exception {
        Message<String> message;
        while ((message = consumer.receive(100, TimeUnit.MILLISECONDS)) != null) {
            String value = message.getValue();
            received.add(value.startsWith("E3:") ? "E3" : value);
            consumer.acknowledge(message);
        }
    }
}
